"""Regressions from the public advisories of crawlers and fetchers, each test named after its
advisory (the table is in docs/reliability.md). This file: the address guard against redirects,
DNS rebinding, bracketed and IPv6 spellings of internal addresses, and non-http schemes.

Real parts only: requests go through the product's gate (`gate.fetch` on an `open_gate`
context, or `execute_async` with the `scrape` executor). The "public" site is a real aiohttp
site on a global address (the outer end of a network namespace's veth, `support.netns`), so its
tasks are public as a user's task on the internet is; the "internal" site listens on loopback
and counts every request it gets, by Host and path: a refusal must leave it at zero.

The suite's shared fixtures and helpers are in `advisory_sites`.
"""

import json
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.errors import AddressRefusedError, RedirectRefusedError
from scrapeflow_dagster.engine.executor import execute_async
from scrapeflow_dagster.engine.gate.fetch import fetch
from scrapeflow_dagster.engine.gate.opening import open_gate
from scrapeflow_dagster.engine.scrape import scrape
from scrapeflow_dagster.engine.status import load_status
from scrapeflow_dagster_tests.engine.gate.sites import Site, redirect, text
from scrapeflow_dagster_tests.reliability.advisory_sites import (
    Listener,
    fetch_refused,
    one_try,
    only_robots,
)
from scrapeflow_dagster_tests.support.netns import PublicHost, public_host  # noqa: F401
from scrapeflow_dagster_tests.support.netns_hosts import namespace_hosts, rewrite_hosts
from scrapeflow_dagster_tests.support.paths import REPO_ROOT
from scrapeflow_dagster_tests.support.processes import ask

# crewAI issue 6520: an SSRF guard that checked the first URL only, bypassed by a redirect and
# by DNS rebinding.


async def test_crewai_6520_redirect_to_loopback_is_refused(
    public: Site, internal: Site, tmp_path: Path
) -> None:
    secret = f"{internal.base}/secret"
    public.routes["/go"] = redirect(secret)
    internal.routes["/secret"] = text("internal secret")

    error = await fetch_refused(tmp_path, {"url": f"{public.base}/go"})

    assert isinstance(error, AddressRefusedError), error
    assert str(error).startswith(f"redirect to {secret}: 127.0.0.1 is a loopback address")
    assert internal.seen == Counter()


async def test_crewai_6520_redirect_to_a_name_resolving_internal_is_refused(
    public: Site, internal: Site, tmp_path: Path
) -> None:
    target = f"http://localhost:{internal.port}/secret"
    public.routes["/go"] = redirect(target)
    internal.routes["/secret"] = text("internal secret")

    error = await fetch_refused(tmp_path, {"url": f"{public.base}/go"})

    assert isinstance(error, AddressRefusedError), error
    assert str(error).startswith(f"redirect to {target}: localhost resolves to "), error
    assert "loopback" in str(error)
    assert internal.seen == Counter()


# The child runs inside the namespace, whose hosts file the test rewrites: a site on 0.0.0.0
# (so both the namespace's public address and its loopback reach it) that notes the local
# address of every request, and the gate of one run, fetching `http://NAME:PORT/page` on
# each "fetch" line read; "served" prints the local addresses seen.
REBIND_CHILD = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    from aiohttp import web
    from scrapeflow_dagster.engine.errors import ScrapeError
    from scrapeflow_dagster.engine.gate.fetch import fetch
    from scrapeflow_dagster.engine.gate.opening import open_gate
    from scrapeflow_dagster.engine.settings import RetryPolicy, ScrapeSettings

    async def main(name, folder):
        served = []

        async def page(request):
            sockname = request.transport.get_extra_info("sockname")
            served.append([str(sockname[0]), request.path])
            response = web.Response(text="page", content_type="text/html")
            response.force_close()  # the next request opens (and resolves) a new connection
            return response

        app = web.Application()
        app.router.add_get("/{tail:.*}", page)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "0.0.0.0", 0).start()
        port = runner.addresses[0][1]
        print(port, flush=True)
        settings = ScrapeSettings(
            request_timeout_seconds=5.0, retry=RetryPolicy(max_attempts=1)
        )
        loop = asyncio.get_running_loop()
        async with open_gate(Path(folder), settings) as context:
            while line := (await loop.run_in_executor(None, sys.stdin.readline)).strip():
                if line == "fetch":
                    try:
                        got = await fetch(context, {"url": f"http://{name}:{port}/page"})
                        answer = {"status": got.status}
                    except ScrapeError as exc:
                        answer = {"refused": type(exc).__name__, "message": str(exc)}
                else:
                    answer = {"served": served}
                print(json.dumps(answer), flush=True)
        await runner.cleanup()

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)
REBIND_NAME = "rebind.test"


@pytest.mark.timeout(120)
def test_crewai_6520_a_name_rebound_from_public_to_loopback_is_refused_at_connection_time(
    public_host: PublicHost,  # noqa: F811
    tmp_path: Path,
) -> None:
    with namespace_hosts(public_host.name, f"{public_host.address} {REBIND_NAME}\n") as hosts:
        child = public_host.start(
            [sys.executable, "-c", REBIND_CHILD, REBIND_NAME, str(tmp_path)],
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip().isdigit()  # serving

        first = ask(child, "fetch")  # the name is public: the task is a public one
        rewrite_hosts(hosts, f"127.0.0.1 {REBIND_NAME}\n")
        second = ask(child, "fetch")
        served = ask(child, "served")["served"]
        assert child.stdin is not None
        child.stdin.close()
        assert child.wait(timeout=30) == 0

    assert first == {"status": 200}
    assert second.get("refused") == "AddressRefusedError", second
    assert f"{REBIND_NAME} resolves to 127.0.0.1 (loopback)" in second["message"], second
    # Every request the site answered came in on its public address, none on loopback.
    assert {address for address, _ in served} == {public_host.address}, served


# Scrapy GHSA-23j4-mw76-5v7h: a redirect to a non-http scheme (file:, ftp:, s3:, data:) let a
# remote server make the crawler read local files or other services.


@pytest.mark.parametrize(
    "location",
    [
        "file:///etc/passwd",
        "ftp://127.0.0.1:{port}/etc/passwd",
        "s3://bucket/key",
        "data:text/plain,secret",
    ],
)
async def test_ghsa_23j4_mw76_5v7h_redirect_to_a_non_http_scheme_is_refused(
    location: str, internal: Site, listener: Listener, tmp_path: Path
) -> None:
    target = location.format(port=listener.port)
    internal.routes["/go"] = redirect(target)

    error = await fetch_refused(tmp_path, {"url": f"{internal.base}/go"})

    assert isinstance(error, RedirectRefusedError), error
    assert str(error) == f"redirect to {target!r}: not an http(s) URL"
    assert listener.connections == 0
    assert "root:" not in str(error)  # nothing of /etc/passwd was read into the error
    assert only_robots(internal) == Counter({(f"127.0.0.1:{internal.port}", "/go"): 1})


# Smokescreen GHSA-qwrf-gfpj-qvj6: a bracketed IPv6 host carrying an internal address
# (IPv4-mapped, or ::1) got past a check that parsed the host as an IPv4 address only.


@pytest.mark.parametrize(
    ("host", "named"),
    [
        ("[::ffff:127.0.0.1]", "::ffff:7f00:1 is a loopback address"),
        ("[0:0:0:0:0:ffff:7f00:1]", "::ffff:7f00:1 is a loopback address"),
        ("[::ffff:7f00:1]", "::ffff:7f00:1 is a loopback address"),
    ],
)
async def test_ghsa_qwrf_gfpj_qvj6_bracketed_mapped_loopback_is_refused(
    host: str, named: str, public: Site, internal: Site, tmp_path: Path
) -> None:
    target = f"http://{host}:{internal.port}/secret"
    public.routes["/go"] = redirect(target)

    redirected = await fetch_refused(tmp_path, {"url": f"{public.base}/go"})
    # As a link learned from a public page: a task of public trust whose own URL it is.
    learned = await fetch_refused(tmp_path / "learned", {"url": target, "trust": "public"})

    for error in (redirected, learned):
        assert isinstance(error, AddressRefusedError), error
        assert named in str(error), error
        assert "address guard" in str(error)
    assert str(redirected).startswith("redirect to http://[::ffff:7f00:1]:")
    assert internal.seen == Counter()


async def test_ghsa_qwrf_gfpj_qvj6_bracketed_ipv6_loopback_is_refused(
    public: Site, tmp_path: Path
) -> None:
    inside = Site("::1")
    await inside.start()
    try:
        target = f"http://[::1]:{inside.port}/secret"
        public.routes["/go"] = redirect(target)
        redirected = await fetch_refused(tmp_path, {"url": f"{public.base}/go"})
        learned = await fetch_refused(tmp_path / "learned", {"url": target, "trust": "public"})
    finally:
        await inside.stop()

    assert isinstance(redirected, AddressRefusedError), redirected
    assert str(redirected).startswith(f"redirect to {target}: ::1 is a loopback address")
    assert isinstance(learned, AddressRefusedError), learned
    assert "::1 is a loopback address" in str(learned)
    assert inside.seen == Counter()


# IPv4-mapped, NAT64 (RFC 6052, 64:ff9b::/96) and 6to4 (2002::/16) spellings carry an IPv4
# address to where it is routed: each is what that IPv4 address is.


@pytest.mark.parametrize(
    ("host", "named"),
    [
        ("[::ffff:127.0.0.1]", "::ffff:7f00:1 is a loopback address"),
        ("[::ffff:7f00:1]", "::ffff:7f00:1 is a loopback address"),
        ("[::ffff:10.0.0.1]", "::ffff:a00:1 is a private address"),
        ("[64:ff9b::7f00:1]", "64:ff9b::7f00:1 is a loopback address"),
        ("[64:ff9b::127.0.0.1]", "64:ff9b::7f00:1 is a loopback address"),
        ("[64:ff9b::a9fe:a9fe]", "64:ff9b::a9fe:a9fe is a link-local address"),
        ("[2002:7f00:1::]", "2002:7f00:1:: is a loopback address"),
        ("[2002:a9fe:a9fe::1]", "2002:a9fe:a9fe::1 is a link-local address"),
    ],
)
async def test_ipv4_mapped_nat64_and_6to4_spellings_of_internal_addresses_are_refused(
    host: str, named: str, public: Site, internal: Site, tmp_path: Path
) -> None:
    public.routes["/go"] = redirect(f"http://{host}:{internal.port}/secret")

    error = await fetch_refused(tmp_path, {"url": f"{public.base}/go"})

    assert isinstance(error, AddressRefusedError), error
    assert f": {named}, refused for a task whose URL is public" in str(error), error
    assert internal.seen == Counter()


def _add_address(public_host: PublicHost, address: str) -> None:  # noqa: F811
    """Give the veth that holds `public_host.outside` the IPv6 `address` too (gone with it)."""
    shown = subprocess.run(
        ["ip", "-o", "-4", "addr", "show", "to", f"{public_host.outside}/32"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert shown, f"no link holds {public_host.outside}"
    link = shown[1]
    subprocess.run(
        ["ip", "addr", "add", f"{address}/128", "dev", link, "nodad"],
        check=True,
        capture_output=True,
        text=True,
    )


async def test_nat64_spelling_of_a_global_address_is_not_refused(
    public_host: PublicHost,  # noqa: F811
    public: Site,
    tmp_path: Path,
) -> None:
    """The control: DNS64's answer for a public IPv4 address is a public address; here the
    NAT64 spelling of the public site's own address, held by the same link."""
    v4 = [int(part) for part in public_host.outside.split(".")]
    nat64 = f"64:ff9b::{v4[0] * 256 + v4[1]:x}:{v4[2] * 256 + v4[3]:x}"
    _add_address(public_host, nat64)
    other = Site(nat64)
    await other.start()
    try:
        other.routes["/page"] = text("reached through NAT64")
        target = f"http://[{nat64}]:{other.port}/page"
        public.routes["/go"] = redirect(target)
        async with open_gate(tmp_path, one_try()) as context:
            got = await fetch(context, {"url": f"{public.base}/go"})
    finally:
        await other.stop()

    assert (got.status, got.body, got.final_url) == (200, b"reached through NAT64", target)
    assert only_robots(other) == Counter({(f"[{nat64}]:{other.port}", "/page"): 1})


# crawl4ai CVE-2026-26217: file:// URLs taken as tasks (or links) read local files.


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "FILE:///etc/passwd", "file://localhost/etc/passwd"]
)
async def test_cve_2026_26217_a_file_url_task_is_refused_naming_it(
    url: str, tmp_path: Path
) -> None:
    error = await fetch_refused(tmp_path, {"url": url})
    assert str(error) == f"url {url!r}: only http and https URLs are fetched"

    # The same task through a run of the `scrape` executor: a failure of its own, recorded.
    await execute_async([scrape], tmp_path / "run", {"t": {"url": url}}, settings=one_try())
    status = load_status(tmp_path / "run", "t")
    assert status is not None
    assert status["scrape_status"].startswith("ERROR "), status
    assert repr(url) in status["scrape_status"], status
    assert "root:" not in json.dumps(status)
