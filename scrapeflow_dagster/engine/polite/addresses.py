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
literals, which aiohttp never resolves, are checked before the request (`guarding`), in every
spelling a browser or the C library reads as an address (`literal_address`: `127.1`,
`0x7f000001`, `0177.0.0.1`, `[::ffff:127.0.0.1]`, ...): aiohttp takes any all-digit host for
a literal and hands it, unresolved, to `getaddrinfo`, which reads `127.1` as 127.0.0.1.

Every connection of a guarded session is checked once more at the socket (`sockets`), where
the only exemption is the connection to the proxy of the request being sent.

Limits: a request through a proxy is resolved by the proxy; its target's name is checked
here first (`sockets.HopScope`), and the proxy may resolve it otherwise (split DNS). A session
you pass to `execute_async` yourself is used for intranet tasks only.
"""

import asyncio
import contextlib
import functools
import ipaddress
import socket
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field

import aiohttp
from ada_url import URL as WhatwgURL
from ada_url import HostType
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from scrapeflow_dagster.engine.errors import AddressRefusedError

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


# 64:ff9b::/96 (RFC 6052): a NAT64 gateway forwards it to the IPv4 address in its last 32 bits.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
# 100.64.0.0/10 (RFC 6598): carrier-grade NAT space, inside a provider's network. Python's
# ipaddress calls it neither private nor global, so it needs a name of its own.
_SHARED = ipaddress.IPv4Network("100.64.0.0/10")
# The first that applies names the address: 240.0.0.0/4 is private too for ipaddress, but
# "reserved" says what it is.
_KINDS = (
    "loopback",
    "link_local",
    "multicast",
    "unspecified",
    "reserved",
    "private",
    # fec0::/10, IPv6 only (RFC 3879 deprecated it; hosts still route it inside a site):
    # Python 3.11's ipaddress calls it global.
    "site_local",
)
# Characters that end a URL's host or belong to its user info: a host holding one is no literal
# (and must not be read as `user@127.1`).
_NOT_IN_HOST = frozenset("/\\?#@")


def _embedded_ipv4(address: IpAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 `address` reaches: IPv4-mapped (`::ffff:a.b.c.d`, the same
    socket destination), NAT64 (`64:ff9b::a.b.c.d`) or 6to4 (`2002:aabb:ccdd::`); None for
    an IPv4 address or any other IPv6 one."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address.sixtofour


def internal_kind(address: IpAddress) -> str | None:
    """What makes `address` internal, None for a global address.

    An IPv6 address that carries an IPv4 one to where it is routed (IPv4-mapped, NAT64
    `64:ff9b::/96`, 6to4 `2002::/16`) is what that IPv4 address is: `::ffff:127.0.0.1` and
    `64:ff9b::7f00:1` are loopback, `64:ff9b::808:808` (DNS64's answer for 8.8.8.8 on an
    IPv6-only network) is global.

    Returns:
        `loopback`, `link-local`, `multicast`, `unspecified`, `private` (10/8, 172.16/12,
        192.168/16, fc00::/7, ...), `reserved`, `site-local` (fec0::/10), `shared`
        (100.64/10), `non-global` (any other address Python's `ipaddress` does not call
        global), or None.
    """
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        return internal_kind(embedded)
    for kind in _KINDS:
        if getattr(address, f"is_{kind}", False):
            return kind.replace("_", "-")
    if address in _SHARED:
        return "shared"
    return None if address.is_global else "non-global"


# Asked for every guarded request, mostly for a few hosts again and again: an answer is a
# frozen address (or None), safe to share.
@functools.lru_cache(maxsize=1 << 16)
def literal_address(host: str) -> IpAddress | None:
    """The address `host` names when it is an IP literal, None when it is a name.

    IPv4 literals are read as browsers read them (the WHATWG URL Standard's host parser,
    through `ada-url`): 1 to 4 dot-separated parts, each decimal, `0x` hexadecimal or
    leading-`0` octal, the last filling the remaining bytes, a trailing dot allowed, after
    percent-decoding and IDNA mapping (`127.1`, `2130706433`, `0x7f000001`, `0177.0.0.1`,
    `127.0.0.1.`, `%31%32%37.0.0.1`, full-width digits); the C library's `inet_aton` and
    `getaddrinfo` read the same numeric forms (without the trailing dot or escapes). IPv6
    literals may be bracketed and carry a zone id (`[fe80::1%25eth0]`, which is dropped). A
    host that is no valid URL host (`1.2.3.4.5`, `256.1`) is no literal either.

    Args:
        host: a URL's host as given (yarl's `raw_host`, a redirect's host, ...).
    """
    text = host.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" in text:
        # Only IPv6 has colons (a host here never carries its port). `%25` is the URL spelling
        # of the `%` starting a zone id, which names the interface, not the address.
        try:
            return ipaddress.IPv6Address(text.split("%", 1)[0])
        except ValueError:
            return None
    if not text or _NOT_IN_HOST.intersection(text):
        return None
    try:
        parsed = WhatwgURL(f"http://{text}/")
    except ValueError:  # not a valid host: a browser refuses the URL, nothing is resolved
        return None
    if parsed.host_type != HostType.IPV4:
        return None
    return ipaddress.IPv4Address(parsed.hostname)


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


@dataclass(frozen=True)
class _Scope:
    """The request in flight in this asyncio task: its host and how refusals name it."""

    host: str
    what: str  # e.g. "redirect to http://..."


_current: ContextVar[_Scope | None] = ContextVar("scrapeflow_address_scope", default=None)


@dataclass
class Hop:
    """The request being sent in this asyncio task (set by `sockets.HopScope`): what it is,
    and the proxy it goes through, whose addresses the resolver fills in as it answers."""

    what: str  # its URL, redacted when named in a refusal
    proxy_host: str | None
    proxy_addresses: set[str] = field(default_factory=set)

    def reaches_proxy(self, address: str) -> bool:
        """Whether a connection to `address` is this request's connection to its proxy."""
        if self.proxy_host is None:
            return False
        if address in self.proxy_addresses:
            return True
        literal = literal_address(self.proxy_host)
        return literal is not None and str(literal) == address


current_hop: ContextVar[Hop | None] = ContextVar("scrapeflow_hop", default=None)


class AddressGuard:
    """One run's address guard (see the module): which tasks are internal, what is allowed."""

    def __init__(self, *, enabled: bool = True, allowed: Sequence[str] = ()) -> None:
        self.enabled = enabled
        self.allowed = parse_networks(allowed)
        self._internal_hosts: dict[str, bool] = {}
        # Set by the run: the session public tasks use (its connector resolves with the guard).
        self.session: aiohttp.ClientSession | None = None

    def refusal(self, address: IpAddress) -> str | None:
        """What makes `address` one a public task may not reach (`internal_kind`), None when
        it is global or in an allowed network."""
        kind = internal_kind(address)
        if kind is None:
            return None
        # An address whose kind is its embedded IPv4 address's is allowed with it too
        # (`::ffff:127.0.0.1` with 127.0.0.0/8): the version mismatch would hide it from `in`.
        reached = (address, _embedded_ipv4(address))
        if any(a is not None and a in network for a in reached for network in self.allowed):
            return None
        return kind

    async def is_internal_host(self, host: str) -> bool:
        """Whether `host` (a task's own) is, or resolves to, an internal address (one resolution
        per host and run; a name that does not resolve counts as public)."""
        # Asked once or twice per request (its route, then its page's trust): a dict lookup
        # rather than a parse each time.
        known = self._internal_hosts.get(host)
        if known is not None:
            return known
        literal = literal_address(host)
        if literal is not None:
            self._internal_hosts[host] = internal_kind(literal) is not None
        else:
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
        literal = literal_address(host)
        if literal is not None:
            kind = self.refusal(literal)
            if kind is not None:
                spelled = (
                    str(literal) if host.strip("[]") == str(literal) else f"{host} ({literal})"
                )
                raise AddressRefusedError(
                    f"{what}: {spelled} is a {kind} address, refused for a task whose URL is "
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
            kind = self.refusal(address)
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
    """aiohttp's default resolver, with every answer filtered by `guard`, but the answer for
    the proxy of the request being sent (`current_hop`): that connection is the proxy's own
    hop, and the addresses it may reach are noted for the socket check (`sockets`)."""

    def __init__(self, guard: AddressGuard) -> None:
        self._inner = DefaultResolver()
        self._guard = guard

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        hop = current_hop.get()
        if hop is not None and hop.proxy_host == host:
            hop.proxy_addresses.update(result["host"].split("%", 1)[0] for result in results)
            return results
        scope = _current.get()
        what = scope.what if scope is not None and scope.host == host else host
        return self._guard.filter_resolved(host, results, what)

    async def close(self) -> None:
        await self._inner.close()
