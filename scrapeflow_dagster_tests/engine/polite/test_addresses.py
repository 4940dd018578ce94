"""The address guard's tables: every spelling a browser or the C library reads as an IP address
is read as that address (`literal_address`), every internal range has a kind (`internal_kind`),
`guarding` refuses each internal literal however spelled and lets global ones through, allowed
networks let theirs through, and names are resolved for real (`is_internal_host`)."""

import ipaddress
import socket

import pytest
from aiohttp.abc import ResolveResult

from scrapeflow_dagster.engine.errors import AddressRefusedError
from scrapeflow_dagster.engine.polite.addresses import (
    AddressGuard,
    internal_kind,
    literal_address,
)

# host as written -> the address a browser (WHATWG URL Standard) connects to.
SPELLINGS = [
    ("127.0.0.1", "127.0.0.1"),
    ("127.1", "127.0.0.1"),
    ("127.0.1", "127.0.0.1"),
    ("2130706433", "127.0.0.1"),
    ("0x7f000001", "127.0.0.1"),
    ("0X7F000001", "127.0.0.1"),
    ("0x7f.0.0.1", "127.0.0.1"),
    ("0x7F.0x0.0x0.0x1", "127.0.0.1"),
    ("0177.0.0.1", "127.0.0.1"),
    ("0177.1", "127.0.0.1"),
    ("017700000001", "127.0.0.1"),
    ("127.0.0.1.", "127.0.0.1"),
    ("127.1.", "127.0.0.1"),
    ("0", "0.0.0.0"),
    ("0x", "0.0.0.0"),
    ("0.0.0.0", "0.0.0.0"),
    ("0xa9fea9fe", "169.254.169.254"),
    ("169.254.43518", "169.254.169.254"),
    ("4294967295", "255.255.255.255"),
    ("%31%32%37.0.0.1", "127.0.0.1"),  # a browser percent-decodes the host first
    ("\uff11\uff12\uff17\uff0e\uff10\uff0e\uff10\uff0e\uff11", "127.0.0.1"),  # full width
    ("127\u30020\u30020\u30021", "127.0.0.1"),  # ideographic full stops
    (" 127.0.0.1 ", "127.0.0.1"),
    ("::1", "::1"),
    ("[::1]", "::1"),
    ("::ffff:127.0.0.1", "::ffff:7f00:1"),
    ("[::FFFF:7F00:1]", "::ffff:7f00:1"),
    ("0:0:0:0:0:0:0:1", "::1"),
    ("fe80::1%eth0", "fe80::1"),
    ("[fe80::1%25eth0]", "fe80::1"),  # the URL spelling of a zone id
    ("FE80::1", "fe80::1"),
    ("8.8.8.8", "8.8.8.8"),
    ("2001:4860:4860::8888", "2001:4860:4860::8888"),
]

# Names, and hosts no browser accepts (nothing is connected to): no literal.
NOT_LITERALS = [
    "localhost",
    "example.com",
    "1.2.3.example",
    "0x7f.example",
    "127.0.0.1..",  # an empty part before the last: a name
    "1.2.3.4.5",  # more than 4 parts
    "256.0.0.1",  # a part above 255 before the last
    "127.16777216",  # the last part overflows the 3 bytes left
    "4294967296",
    "0x100000000",
    "08.0.0.1",  # 8 is no octal digit
    "0x7g.0.0.1",
    "1..2",
    "user@127.0.0.1",  # user info: its host is 127.0.0.1, but this is no host
    "127.0.0.1/",
    "",
    "[]",
    "::g",
    "[127.0.0.1:80]",
]

# A host (a literal in any spelling) -> its kind; None: global.
KINDS = [
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("0x7f000001", "loopback"),
    ("127.1", "loopback"),
    ("::1", "loopback"),
    ("[::1]", "loopback"),
    ("::ffff:127.0.0.1", "loopback"),  # IPv4-mapped: the same socket destination
    ("64:ff9b::127.0.0.1", "loopback"),  # NAT64 of loopback: as the mapped address
    ("64:ff9b::7f00:1", "loopback"),
    ("2002:7f00:1::1", "loopback"),  # 6to4 embedding 127.0.0.1
    ("0.0.0.0", "unspecified"),  # Linux connects it to this machine
    ("0", "unspecified"),
    ("::", "unspecified"),
    ("10.0.0.1", "private"),
    ("0xa000001", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.255", "private"),
    ("192.168.1.1", "private"),
    ("0300.0250.1.1", "private"),  # 192.168.1.1 in octal
    ("::ffff:10.1.2.3", "private"),
    ("64:ff9b::10.1.2.3", "private"),
    ("2002:c0a8:101::", "private"),  # 6to4 embedding 192.168.1.1
    ("fc00::1", "private"),
    ("fd12:3456:789a::1", "private"),
    ("100.64.0.1", "shared"),  # carrier-grade NAT (RFC 6598): ipaddress calls it not private
    ("100.127.255.254", "shared"),
    ("64:ff9b::100.64.0.1", "shared"),
    ("169.254.169.254", "link-local"),  # the cloud metadata service
    ("0xa9fea9fe", "link-local"),
    ("::ffff:169.254.169.254", "link-local"),
    ("fe80::1", "link-local"),
    ("fe80::1%eth0", "link-local"),
    ("fec0::1", "site-local"),  # deprecated site-local: still inside a site, not global
    ("feff::1", "site-local"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("ff02::1", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "reserved"),
    ("::127.0.0.1", "reserved"),  # IPv4-compatible (deprecated): never routed
    ("198.18.0.1", "private"),  # benchmarking
    ("192.0.2.1", "private"),  # documentation (TEST-NET-1)
    ("203.0.113.7", "private"),  # documentation (TEST-NET-3): not global either
    ("2001:db8::1", "private"),  # documentation
    ("8.8.8.8", None),
    ("1.1.1.1", None),
    ("0x8080808", None),
    ("11.1.2.3", None),  # the test hosts' "public" addresses (support.netns)
    ("2001:4860:4860::8888", None),
    ("::ffff:8.8.8.8", None),
    ("64:ff9b::8.8.8.8", None),  # DNS64's answer for a public name on an IPv6-only network
    ("2002:808:808::1", None),  # 6to4 of a public address
]
INTERNAL = [(host, kind) for host, kind in KINDS if kind is not None]
GLOBAL = [host for host, kind in KINDS if kind is None]


@pytest.mark.parametrize(("host", "address"), SPELLINGS)
def test_every_spelling_of_an_address_is_read_as_that_address(host: str, address: str) -> None:
    assert literal_address(host) == ipaddress.ip_address(address)


@pytest.mark.parametrize("host", NOT_LITERALS)
def test_names_and_invalid_hosts_are_no_literals(host: str) -> None:
    assert literal_address(host) is None


# What glibc reads as well: not a trailing dot, escapes, zone ids (of interfaces this machine
# may not have), Unicode or a bare "0x", which browsers alone read.
C_SPELLINGS = [
    host
    for host, _ in SPELLINGS
    if not host.endswith(".") and host.isascii() and "%" not in host and host != "0x"
]


@pytest.mark.parametrize("host", C_SPELLINGS)
def test_the_c_library_reads_the_numeric_spellings_alike(host: str) -> None:
    # aiohttp hands an all-digit host to getaddrinfo unresolved: what it connects to.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    text = host.strip().strip("[]")
    infos = socket.getaddrinfo(text, None, family, flags=socket.AI_NUMERICHOST)
    assert {ipaddress.ip_address(info[4][0]) for info in infos} == {literal_address(host)}


@pytest.mark.parametrize(("host", "kind"), KINDS)
def test_every_internal_range_has_a_kind(host: str, kind: str | None) -> None:
    address = literal_address(host)
    assert address is not None
    assert internal_kind(address) == kind


@pytest.mark.parametrize(("host", "kind"), INTERNAL)
def test_guarding_refuses_every_internal_literal_however_spelled(host: str, kind: str) -> None:
    guard = AddressGuard()
    with (
        pytest.raises(AddressRefusedError, match=f"is a {kind} address") as refused,
        guard.guarding(host, task_internal=False, what="redirect to http://x/"),
    ):
        pytest.fail("the request went on")
    assert str(refused.value).startswith("redirect to http://x/: ")
    assert "address guard" in str(refused.value)


@pytest.mark.parametrize(
    ("host", "named"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("::1", "::1"),
        ("0x7f.1", r"0x7f\.1 \(127\.0\.0\.1\)"),
        ("2130706433", r"2130706433 \(127\.0\.0\.1\)"),
        ("fe80::1%25eth0", r"fe80::1%25eth0 \(fe80::1\)"),
    ],
)
def test_a_refusal_names_the_host_as_spelled_and_the_address_it_is(host: str, named: str) -> None:
    with (
        pytest.raises(AddressRefusedError, match=f"^link: {named} is a"),
        AddressGuard().guarding(host, task_internal=False, what="link"),
    ):
        pass


@pytest.mark.parametrize("host", GLOBAL)
def test_guarding_lets_global_literals_through(host: str) -> None:
    with AddressGuard().guarding(host, task_internal=False, what="link"):
        pass


@pytest.mark.parametrize(("host", "_kind"), INTERNAL)
def test_intranet_tasks_and_a_guard_switched_off_are_not_checked(host: str, _kind: str) -> None:
    with AddressGuard().guarding(host, task_internal=True, what="link"):
        pass
    with AddressGuard(enabled=False).guarding(host, task_internal=False, what="link"):
        pass


LOOPBACK_V4 = [
    host
    for host, kind in KINDS
    if kind == "loopback" and host not in ("::1", "[::1]")  # ::1 is no 127.0.0.0/8 address
]


@pytest.mark.parametrize("host", LOOPBACK_V4)
def test_an_allowed_network_lets_its_addresses_through_however_spelled(host: str) -> None:
    guard = AddressGuard(allowed=["127.0.0.0/8"])  # `address_guard_allow: ["127.0.0.0/8"]`
    with guard.guarding(host, task_internal=False, what="link"):
        pass


@pytest.mark.parametrize(("host", "kind"), [("::1", "loopback"), ("10.0.0.1", "private")])
def test_an_allowed_network_lets_only_its_addresses_through(host: str, kind: str) -> None:
    guard = AddressGuard(allowed=["127.0.0.0/8"])
    with (
        pytest.raises(AddressRefusedError, match=f"is a {kind} address"),
        guard.guarding(host, task_internal=False, what="link"),
    ):
        pass


def resolved(*addresses: str) -> list[ResolveResult]:
    """Answers as aiohttp's resolver gives them."""
    return [
        ResolveResult(
            hostname="rebind.test",
            host=address,
            port=80,
            family=socket.AF_INET6 if ":" in address else socket.AF_INET,
            proto=0,
            flags=socket.AI_NUMERICHOST,
        )
        for address in addresses
    ]


def test_resolved_internal_addresses_are_dropped_and_none_left_is_refused() -> None:
    guard = AddressGuard()
    answers = resolved("127.0.0.1", "8.8.8.8", "fe80::1%eth0", "::ffff:10.0.0.1")
    assert guard.filter_resolved("rebind.test", answers, "link") == [answers[1]]
    with pytest.raises(
        AddressRefusedError,
        match=r"link: rebind\.test resolves to 127\.0\.0\.1 \(loopback\), 100\.64\.0\.1 "
        r"\(shared\)",
    ):
        guard.filter_resolved("rebind.test", resolved("127.0.0.1", "100.64.0.1"), "link")
    allowing = AddressGuard(allowed=["127.0.0.0/8"])
    loopback = resolved("127.0.0.1", "::ffff:127.0.0.2")
    assert allowing.filter_resolved("rebind.test", loopback, "link") == loopback


@pytest.mark.parametrize(("host", "kind"), KINDS)
async def test_a_literal_task_host_is_internal_by_its_kind(host: str, kind: str | None) -> None:
    assert await AddressGuard().is_internal_host(host) is (kind is not None)


async def test_localhost_resolves_to_an_internal_address() -> None:
    assert await AddressGuard().is_internal_host("localhost") is True
