"""Connections checked at the socket: the last line of the address guard.

A guarded session (`gate.opening.guarded_session`: public routes, and `context.session` of a
public task) opens every connection through `GuardedSockets`, which refuses an internal
address whatever led to it: a name the resolver answered, an IP literal in any spelling
(aiohttp hands literals to the socket unresolved), a redirect aiohttp followed, code of a
user's that never went through `gate.fetch`. The resolver's filter (`GuardedResolver`) and the
literal check before a request (`AddressGuard.guarding`) refuse earlier with a clearer message;
this check holds when they were skipped.

The one exemption is the proxy of the request being sent: `hop_scope`, a session middleware,
names each request's proxy (aiohttp's `ClientRequest.proxy`), and only a connection to that
proxy's host, for that request, may reach an internal address (a proxy on the crawler's own
network). A page's link to the proxy's host is checked like any other.
"""

import ipaddress
import socket

from aiohappyeyeballs import AddrInfoType
from aiohttp import ClientHandlerType, ClientRequest, ClientResponse

from scrapeflow_dagster.engine.errors import AddressRefusedError
from scrapeflow_dagster.engine.polite.addresses import AddressGuard, Hop, current_hop
from scrapeflow_dagster.engine.redact import redact


async def hop_scope(request: ClientRequest, handler: ClientHandlerType) -> ClientResponse:
    """Session middleware: each request (each redirect aiohttp follows, too) names itself and
    its proxy for the resolver and the socket check of the connections it opens."""
    proxy = request.proxy
    hop = Hop(str(request.url), proxy.raw_host if proxy is not None else None)
    token = current_hop.set(hop)
    try:
        return await handler(request)
    finally:
        current_hop.reset(token)


class GuardedSockets:
    """aiohttp's `socket_factory`: a socket for an allowed address, `AddressRefusedError` for
    an internal one (see the module)."""

    def __init__(self, guard: AddressGuard) -> None:
        self._guard = guard

    def __call__(self, addr_info: AddrInfoType) -> socket.socket:
        family, type_, proto, _, sockaddr = addr_info
        host = str(sockaddr[0]).split("%", 1)[0]
        kind = self._guard.refusal(ipaddress.ip_address(host))
        if kind is not None:
            hop = current_hop.get()
            if hop is None or not hop.reaches_proxy(host):
                what = redact(hop.what) if hop is not None else "a connection"
                raise AddressRefusedError(
                    f"{what}: connecting to {host}, a {kind} address, refused for a task whose "
                    "URL is public (address guard)"
                )
        return socket.socket(family=family, type=type_, proto=proto)
