"""A user's executor fetches through the gate: `context.session` is checked at the socket
against its task's trust and follows no redirect, `context.fetch` is the gate itself, and only
`context.unguarded_session` (named for the risk) reaches past it.

The public page is served from a network namespace at a global address (a public task, as a
crawl of the web has); the internal site is on this machine's loopback and counts every
request it gets.
"""

import asyncio
import json
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from scrapeflow_dagster.engine.errors import ScrapeError
from scrapeflow_dagster.engine.executor import (
    Context,
    ExecutorOutput,
    execute_async,
    resolve_link,
    taskify,
)
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.gate.opening import open_gate
from scrapeflow_dagster.engine.proxies import ProxyProviderFromList
from scrapeflow_dagster.engine.state.schema import StatusData
from scrapeflow_dagster_tests.conftest import fast_settings
from scrapeflow_dagster_tests.engine.gate.sites import Site, redirect, text
from scrapeflow_dagster_tests.fakes.forward_proxy import ForwardProxy
from scrapeflow_dagster_tests.support.netns import PublicHost, public_host  # noqa: F401

# A page server run inside the namespace: `/page` links to every URL given on its command line.
_PAGE_SERVER = """
import sys
from aiohttp import web
links = "".join(f'<a href="{url}">x</a>' for url in sys.argv[2:])
async def page(request):
    return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")
app = web.Application()
app.router.add_get("/page", page)
web.run_app(app, host="0.0.0.0", port=int(sys.argv[1]), print=lambda *a: print("up", flush=True))
"""


def _serve_page(host: PublicHost, links: list[str], tmp_path: Path) -> str:
    """A public page linking to `links`; its URL once it answers."""
    log = tmp_path / "page.log"
    host.start([sys.executable, "-c", _PAGE_SERVER, "8081", *links], stdout=open(log, "w"))
    url = f"http://{host.address}:8081/page"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return url
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _links(context: Context, key: str, status: StatusData) -> list[str]:
    """The page's absolute links, resolved as a browser resolves them (as docs/using.md)."""
    from selectolax.lexbor import LexborHTMLParser as HTMLParser

    page_url = status["scrape"]["final_url"]
    body = (context.dir / f"{key}.scrape").read_bytes()
    hrefs = [a.attributes.get("href") or "" for a in HTMLParser(body).css("a[href]")]
    return [url for href in hrefs if (url := resolve_link(page_url, href)) is not None]


@taskify
async def with_session(context: Context, key: str, status: StatusData) -> ExecutorOutput:
    """Fetches each link with `context.session`, recording what happened."""
    seen: dict[str, Any] = {}
    for url in _links(context, key, status):
        try:
            async with context.session.get(url) as response:  # type: ignore[union-attr]
                seen[url] = response.status
        except RuntimeError as exc:
            seen[url] = f"{type(exc).__name__}: {exc}"
    return {"seen": seen}


@taskify
async def with_fetch(context: Context, key: str, status: StatusData) -> ExecutorOutput:
    """Fetches each link with `context.fetch` (the gate), recording what happened."""
    seen: dict[str, Any] = {}
    for url in _links(context, key, status):
        try:
            seen[url] = (await context.fetch(url)).status
        except ScrapeError as exc:
            seen[url] = f"{type(exc).__name__}: {exc}"
    return {"seen": seen}


@taskify
async def with_unguarded(context: Context, key: str, status: StatusData) -> ExecutorOutput:
    """The opt-out: the plain session, which reaches anything."""
    seen: dict[str, Any] = {}
    for url in _links(context, key, status):
        assert context.unguarded_session is not None
        async with context.unguarded_session.get(url) as response:
            seen[url] = response.status
    return {"seen": seen}


def _output(tmp_path: Path, key: str, executor: str) -> dict[str, Any]:
    status = json.loads((tmp_path / f"{key}.status.json").read_text())
    assert status[f"{executor}_status"] == "SUCCESS", status[f"{executor}_status"]
    return dict(status[executor]["seen"])


@pytest.fixture
async def internal() -> AsyncIterator[Site]:
    """The internal site on loopback, counting every request it gets."""
    site = Site("127.0.0.1")
    site.routes["/secret"] = text("secret")
    await site.start()
    yield site
    await site.stop()


async def _run_public_page(
    host: PublicHost, tmp_path: Path, executor: Any, links: list[str], *, proxy: str | None = None
) -> tuple[list[str], dict[str, Any]]:
    """`scrape` then `executor` over a public page linking to `links` (through `proxy`, if
    given): the keys done and what the executor saw of each link."""
    page = _serve_page(host, links, tmp_path)
    done = await execute_async(
        [scrape, executor],
        tmp_path,
        {"t": {"url": page}},
        settings=fast_settings(),
        proxy_provider=ProxyProviderFromList([proxy]) if proxy is not None else None,
    )
    return done, _output(tmp_path, "t", executor.__name__) if done else {}


@pytest.mark.parametrize("executor", [with_session, with_fetch])
async def test_an_executor_of_a_public_task_cannot_reach_an_internal_address(
    public_host: PublicHost,  # noqa: F811
    internal: Site,
    tmp_path: Path,
    executor: Any,
) -> None:
    links = [f"{internal.base}/secret", f"http://localhost:{internal.port}/secret"]
    done, seen = await _run_public_page(public_host, tmp_path, executor, links)
    assert done == ["t"]
    assert sorted(seen) == sorted(links)
    for url, what in seen.items():
        assert "AddressRefusedError" in str(what) and "loopback" in str(what), (url, what)
    assert internal.seen == Counter()  # not one request reached the internal site


async def test_the_unguarded_session_is_the_named_opt_out_and_does_reach_inside(
    public_host: PublicHost,  # noqa: F811
    internal: Site,
    tmp_path: Path,
) -> None:
    # What the two tests above would see if the doors were open: the harness counts a leak.
    links = [f"{internal.base}/secret"]
    _, seen = await _run_public_page(public_host, tmp_path, with_unguarded, links)
    assert seen == {f"{internal.base}/secret": 200}
    assert sum(internal.seen.values()) == 1


async def test_a_name_resolving_inside_is_refused_before_the_proxy_fetches_it(
    public_host: PublicHost,  # noqa: F811
    internal: Site,
    tmp_path: Path,
) -> None:
    # Through a proxy only the proxy connects to the target, resolving it itself: the gate
    # resolves the name first and refuses one that is internal here.
    links = [f"http://localhost:{internal.port}/secret"]
    async with ForwardProxy() as proxy:
        done, seen = await _run_public_page(
            public_host, tmp_path, with_fetch, links, proxy=proxy.url
        )
    assert done == ["t"]
    assert "resolves to an internal address here, refused through the proxy" in str(seen), seen
    assert internal.seen == Counter()


async def test_a_named_proxy_is_exempt_for_its_own_hop_only(
    public_host: PublicHost,  # noqa: F811
    internal: Site,
    tmp_path: Path,
) -> None:
    # The run's proxy is named `localhost`: the scrape goes through it (its hop may reach an
    # internal address), but an executor's direct request to `localhost` is checked as any.
    links = [f"http://localhost:{internal.port}/secret"]
    async with ForwardProxy() as proxy:
        named = proxy.url.replace("127.0.0.1", "localhost")
        done, seen = await _run_public_page(public_host, tmp_path, with_session, links, proxy=named)
    assert done == ["t"]
    assert "AddressRefusedError" in str(seen), seen
    assert internal.seen == Counter()


@taskify
async def follows(context: Context, key: str, status: StatusData) -> ExecutorOutput:
    """What `context.session` and `context.fetch` do with a redirect."""
    url = status["params"]["url"]
    async with context.session.get(url) as response:  # type: ignore[union-attr]
        session_status = response.status
    fetched = await context.fetch(url)
    return {"session": session_status, "fetch": fetched.status, "final": fetched.final_url}


async def test_context_session_follows_no_redirect_and_context_fetch_follows_it_through_the_gate(
    tmp_path: Path,
) -> None:
    site = Site("127.0.0.1")
    site.routes["/start"] = redirect("/end")
    site.routes["/end"] = text("the end")
    site.routes["/robots.txt"] = text("User-agent: *\nDisallow: /private\n")
    site.routes["/private"] = text("private")
    await site.start()
    try:
        tasks = {"ok": {"url": f"{site.base}/start"}, "no": {"url": f"{site.base}/private"}}
        done = await execute_async([follows], tmp_path, tasks, settings=fast_settings())
    finally:
        await site.stop()
    assert done == ["ok"]
    ok = json.loads((tmp_path / "ok.status.json").read_text())["follows"]
    assert ok == {"session": 302, "fetch": 200, "final": f"{site.base}/end"}
    no = json.loads((tmp_path / "no.status.json").read_text())
    # context.session sent it (an intranet task's own URL); context.fetch asked robots.txt.
    assert no["follows_status"].startswith("ERROR DisallowedError"), no["follows_status"]
    host = f"127.0.0.1:{site.port}"
    assert site.seen[host, "/private"] == 1  # the session's request only
    assert site.seen[host, "/end"] == 1  # the gate's hop only, not the session


async def test_asking_context_session_to_follow_redirects_names_the_way_that_does(
    tmp_path: Path,
) -> None:
    @taskify
    async def insists(context: Context, key: str, status: StatusData) -> ExecutorOutput:
        context.session.get(status["params"]["url"], allow_redirects=True)  # type: ignore[union-attr]
        return {}

    with pytest.raises(ValueError, match="context.fetch"):
        await execute_async([insists], tmp_path, {"t": {"url": "http://127.0.0.1:9/"}})


async def test_context_session_hands_over_no_way_around_the_check(tmp_path: Path) -> None:
    async with open_gate(tmp_path, fast_settings()) as context:
        for name in ("_request", "connector", "ws_connect"):
            with pytest.raises(AttributeError, match="unguarded_session"):
                getattr(context.session, name)


async def test_a_context_built_by_hand_says_it_has_no_gate_to_fetch_through(
    tmp_path: Path,
) -> None:
    context = Context(tmp_path, None, [], asyncio.Semaphore(1), 1.0, None)
    with pytest.raises(RuntimeError, match="no gate to fetch through"):
        await context.fetch("http://127.0.0.1:9/")
