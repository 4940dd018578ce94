"""The address guard: a page (or a redirect) on a public site must not lead the crawler into an
internal network, such as the cloud metadata service at 169.254.169.254 or an admin port on
localhost.

A request whose host is, or resolves to, a loopback, private, link-local, multicast, reserved
or otherwise non-global address is refused, unless the task's own URL is on such an address
(intranet task lists and local tests keep working) or the address is in an allowed network.
Public tasks send every request (robots.txt included) through a session of their own
(`AddressGuard.session`), whose connector resolves names with `GuardedResolver` and aiohttp's
DNS cache off: each new connection is checked on the addresses its name resolves to when it is
made (a name that resolves to a public address first and to an internal one later is still
caught), and its keep-alive pool never holds a connection an intranet task opened. IP
literals, which aiohttp never resolves, are checked before the request (`guarding`).

Limits: a request through a proxy is resolved by the proxy (only literals are checked); a
session you pass to `execute_async` yourself has no guarded resolver (literals only).
"""

import asyncio
import contextlib
import ipaddress
import socket
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from scrapeflow_dagster.engine.errors import AddressRefusedError

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def internal_kind(address: IpAddress) -> str | None:
    """What makes `address` internal (`loopback`, `private`, ...), None for a global address."""
    mapped = getattr(address, "ipv4_mapped", None)
    if mapped is not None:
        address = mapped
    for kind in ("loopback", "link_local", "multicast", "unspecified", "private", "reserved"):
        if getattr(address, f"is_{kind}"):
            return kind.replace("_", "-")
    return None if address.is_global else "non-global"


def parse_networks(networks: Sequence[str]) -> tuple[IpNetwork, ...]:
    """The allowed networks as `ip_network`s.

    Raises:
        ValueError: naming the entry that is not a network (`10.0.0.0/8`) or an address.
    """
    parsed = []
    for text in networks:
        try:
            parsed.append(ipaddress.ip_network(text.strip(), strict=False))
        except ValueError:
            raise ValueError(
                f"allowed network {text!r} is not an IP network such as 10.1.0.0/16"
            ) from None
    return tuple(parsed)


def _literal(host: str) -> IpAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


@dataclass(frozen=True)
class _Scope:
    """The request in flight in this asyncio task: its host and how refusals name it."""

    host: str
    what: str  # e.g. "redirect to http://..."


_current: ContextVar[_Scope | None] = ContextVar("scrapeflow_address_scope", default=None)


class AddressGuard:
    """One run's address guard (see the module): which tasks are internal, what is allowed."""

    def __init__(self, *, enabled: bool = True, allowed: Sequence[str] = ()) -> None:
        self.enabled = enabled
        self.allowed = parse_networks(allowed)
        self._internal_hosts: dict[str, bool] = {}
        # Set by the run: the session public tasks use (its connector resolves with the guard).
        self.session: aiohttp.ClientSession | None = None
        # Proxy hosts: resolved for the connection to the proxy, never checked.
        self.exempt: set[str] = set()

    def _refusal(self, address: IpAddress) -> str | None:
        kind = internal_kind(address)
        if kind is None or any(address in network for network in self.allowed):
            return None
        return kind

    async def is_internal_host(self, host: str) -> bool:
        """Whether `host` (a task's own) is, or resolves to, an internal address (one resolution
        per host and run; a name that does not resolve counts as public)."""
        literal = _literal(host)
        if literal is not None:
            return internal_kind(literal) is not None
        if host not in self._internal_hosts:
            try:
                infos = await asyncio.get_running_loop().getaddrinfo(
                    host, None, type=socket.SOCK_STREAM
                )
            except OSError:
                infos = []
            self._internal_hosts[host] = any(
                internal_kind(ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])) is not None
                for info in infos
            )
        return self._internal_hosts[host]

    @contextlib.contextmanager
    def guarding(self, host: str, *, task_internal: bool, what: str) -> Iterator[None]:
        """Check a request to `host` (named `what` in refusals): a literal now, a name when
        the guarded session resolves it.

        Raises:
            AddressRefusedError: `host` is an internal IP literal the task may not reach.
        """
        if not self.enabled or task_internal:
            yield
            return
        literal = _literal(host)
        if literal is not None:
            kind = self._refusal(literal)
            if kind is not None:
                raise AddressRefusedError(
                    f"{what}: {literal} is a {kind} address, refused for a task whose URL is "
                    "public (address guard)"
                )
        token = _current.set(_Scope(host, what))
        try:
            yield
        finally:
            _current.reset(token)

    def filter_resolved(
        self, host: str, results: list[ResolveResult], what: str
    ) -> list[ResolveResult]:
        """The addresses of `results` the request may connect to.

        Raises:
            AddressRefusedError: every address `host` resolved to is refused.
        """
        kept: list[ResolveResult] = []
        refused: list[str] = []
        for result in results:
            address = ipaddress.ip_address(result["host"].split("%", 1)[0])
            kind = self._refusal(address)
            if kind is None:
                kept.append(result)
            else:
                refused.append(f"{address} ({kind})")
        if not kept:
            raise AddressRefusedError(
                f"{what}: {host} resolves to {', '.join(refused)}, refused for a task whose "
                "URL is public (address guard)"
            )
        return kept


class GuardedResolver(AbstractResolver):
    """aiohttp's default resolver, with every answer filtered by `guard` (proxy hosts, which
    the guard exempts, are left alone)."""

    def __init__(self, guard: AddressGuard) -> None:
        self._inner = DefaultResolver()
        self._guard = guard

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        if host in self._guard.exempt:
            return results
        scope = _current.get()
        what = scope.what if scope is not None and scope.host == host else host
        return self._guard.filter_resolved(host, results, what)

    async def close(self) -> None:
        await self._inner.close()
