"""Connections checked at the socket: the last line of the address guard.

A guarded session (`gate.opening.guarded_session`: public routes, and `context.session` of a
public task) opens every connection through `GuardedSockets`, which refuses an internal
address whatever led to it: a name the resolver answered, an IP literal in any spelling
(aiohttp hands literals to the socket unresolved), a redirect aiohttp followed, code of a
user's that never went through `gate.fetch`. The resolver's filter (`GuardedResolver`) and the
literal check before a request (`AddressGuard.guarding`) refuse earlier with a clearer message;
this check holds when they were skipped.

The one exemption is the proxy of the request being sent: `HopScope`, a session middleware,
names each request's proxy (aiohttp's `ClientRequest.proxy`), and only a connection to that
proxy's host, for that request, may reach an internal address (a proxy on the crawler's own
network). A page's link to the proxy's host is checked like any other.
"""

import socket

from aiohappyeyeballs import AddrInfoType
from aiohttp import ClientHandlerType, ClientRequest, ClientResponse
from yarl import URL

from scrapeflow_dagster.engine.errors import AddressRefusedError
from scrapeflow_dagster.engine.polite.addresses import (
    AddressGuard,
    Hop,
    current_hop,
    literal_address,
)
from scrapeflow_dagster.engine.redact import redact


class HopScope:
    """Session middleware: each request (each redirect aiohttp follows, too) names itself and
    its proxy for the resolver and the socket check of the connections it opens.

    A request through a proxy connects to the proxy alone, which resolves and reaches the
    target itself: the socket check never sees the target. So its target is checked here
    first: an internal literal, a name that resolves to an internal address here, or the
    proxy's own host and port (its admin pages) are refused. The proxy may still resolve a
    name otherwise than this machine (split DNS): a limit the docs state.
    """

    def __init__(self, guard: AddressGuard) -> None:
        self._guard = guard

    async def __call__(self, request: ClientRequest, handler: ClientHandlerType) -> ClientResponse:
        proxy = request.proxy
        if proxy is not None and self._guard.enabled:
            await self._check_target(request.url, proxy)
        hop = Hop(str(request.url), proxy.raw_host if proxy is not None else None)
        token = current_hop.set(hop)
        try:
            return await handler(request)
        finally:
            current_hop.reset(token)

    async def _check_target(self, url: URL, proxy: URL) -> None:
        host = url.raw_host or ""
        why = None
        if (host, url.port) == (proxy.raw_host, proxy.port):
            why = "is the proxy itself"
        else:
            literal = literal_address(host)
            kind = self._guard.refusal(literal) if literal is not None else None
            if kind is not None:
                why = f"is a {kind} address"
            elif literal is None and await self._guard.is_internal_host(host):
                why = "resolves to an internal address here"
        if why is not None:
            raise AddressRefusedError(
                f"{redact(str(url))}: {host} {why}, refused through the proxy for a task whose "
                "URL is public (address guard)"
            )


class GuardedSockets:
    """aiohttp's `socket_factory`: a socket for an allowed address, `AddressRefusedError` for
    an internal one (see the module)."""

    def __init__(self, guard: AddressGuard) -> None:
        self._guard = guard

    def __call__(self, addr_info: AddrInfoType) -> socket.socket:
        family, type_, proto, _, sockaddr = addr_info
        host = str(sockaddr[0]).split("%", 1)[0]
        # Canonical from the resolver; an older aiohttp hands a literal over as written
        # (`127.1`): read as a browser reads it, and refused when it is no address at all.
        address = literal_address(host)
        if address is None:
            raise AddressRefusedError(f"connecting to {host!r}: not an IP address (address guard)")
        kind = self._guard.refusal(address)
        if kind is not None:
            hop = current_hop.get()
            if hop is None or not hop.reaches_proxy(host):
                what = redact(hop.what) if hop is not None else "a connection"
                raise AddressRefusedError(
                    f"{what}: connecting to {host}, a {kind} address, refused for a task whose "
                    "URL is public (address guard)"
                )
        return socket.socket(family=family, type=type_, proto=proto)
