"""A rendered page's requests as its site sees them: sent with the page's own method, and sent
from the page's real URL (a token in it included) while its status holds that URL redacted.

The site is a small aiohttp app on loopback whose pages need a `token` query value, as signed
URLs and API-key links do: a page's script asks for data with its own query (`location`), which
the site refuses without the token.
"""

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.typedefs import Handler

from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.render import render
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.run.execute import execute_async
from scrapeflow_dagster.engine.state.files import load_status

CHAIN = [scrape, render, pages]
SECRET = "s3cret-42"
SIGNED_PAGE = (
    "<!doctype html><title>Signed</title><p>The page.</p>"
    '<script src="app.js"></script>'  # relative: loaded from the page's own URL
)
# The page's data, asked for with the page's own query (its token), as signed pages do.
SIGNED_SCRIPT = """
fetch('data.json' + location.search)
  .then(r => r.ok ? r.text() : 'refused ' + r.status)
  .then(text => { const p = document.createElement('p'); p.textContent = text;
                  document.body.append(p); });
"""
HEAD_PAGE = """<!doctype html><title>Head</title><p id=out>asked:</p><script>
fetch('probe', {method: 'HEAD'})
  .then(r => { document.getElementById('out').textContent += ' ' + r.status; });
</script>"""


class SignedSite:
    """The app's base URL and every request it saw (`METHOD /path?query`)."""

    def __init__(self) -> None:
        self.base = ""
        self.seen: list[str] = []

    def url(self, path: str) -> str:
        return f"{self.base}{path}"


def _app(site: SignedSite) -> web.Application:
    def signed(request: web.Request) -> None:
        if request.query.get("token") != SECRET:
            raise web.HTTPForbidden(text="no token")

    async def page(request: web.Request) -> web.Response:
        signed(request)
        return web.Response(text=SIGNED_PAGE, content_type="text/html")

    async def script(request: web.Request) -> web.Response:
        return web.Response(text=SIGNED_SCRIPT, content_type="text/javascript")

    async def data(request: web.Request) -> web.Response:
        signed(request)
        return web.Response(text="the signed data", content_type="text/plain")

    async def issue(request: web.Request) -> web.Response:
        # A redirect that issues the token: the task's URL holds none, the page's URL does.
        raise web.HTTPFound(f"/signed/page?token={SECRET}")

    async def head_page(request: web.Request) -> web.Response:
        return web.Response(text=HEAD_PAGE, content_type="text/html")

    async def probe(request: web.Request) -> web.Response:
        return web.Response(text="probed")

    @web.middleware
    async def record(request: web.Request, handler: Handler) -> web.StreamResponse:
        site.seen.append(f"{request.method} {request.path_qs}")
        return await handler(request)

    app = web.Application(middlewares=[record])
    app.router.add_get("/signed/page", page)
    app.router.add_get("/signed/app.js", script)
    app.router.add_get("/signed/data.json", data)
    app.router.add_get("/issue", issue)
    app.router.add_get("/head/page", head_page)
    app.router.add_route("*", "/head/probe", probe)
    return app


@pytest.fixture
async def signed_site() -> AsyncIterator[SignedSite]:
    site = SignedSite()
    runner = web.AppRunner(_app(site))
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    host, port = runner.addresses[0][:2]
    site.base = f"http://{host}:{port}"
    try:
        yield site
    finally:
        await runner.cleanup()


async def test_a_head_request_of_a_rendered_page_is_sent_as_a_head(
    signed_site: SignedSite, tmp_path: Path
) -> None:
    tasks = {"head": {"url": signed_site.url("/head/page"), "render": True}}
    assert await execute_async(CHAIN, tmp_path, tasks) == ["head"]
    status = load_status(tmp_path, "head")
    assert status is not None
    assert status["render"]["fetched"] == 1 and status["render"]["refused"] == 0
    assert "asked: 200" in status["pages"]["text_start"]
    assert [seen for seen in signed_site.seen if "/probe" in seen] == ["HEAD /head/probe"]


async def test_a_page_whose_url_holds_a_token_is_rendered_at_its_real_url(
    signed_site: SignedSite, tmp_path: Path
) -> None:
    """Its script's request carries the page's token (the site answers it), while the task's
    status holds the URL redacted, as before."""
    url = signed_site.url(f"/signed/page?token={SECRET}")
    tasks = {"signed": {"url": url, "render": True}}
    assert await execute_async(CHAIN, tmp_path, tasks) == ["signed"]
    status = load_status(tmp_path, "signed")
    assert status is not None
    assert status["render"]["fetched"] == 2 and status["render"]["refused"] == 0
    assert "the signed data" in status["pages"]["text_start"]
    assert f"GET /signed/data.json?token={SECRET}" in signed_site.seen
    assert status["render"]["final_url"] == signed_site.url("/signed/page?token=***")
    assert SECRET not in json.dumps([status["scrape"], status["render"]])


async def test_a_page_redirected_to_a_url_holding_a_token_is_rendered_there(
    signed_site: SignedSite, tmp_path: Path
) -> None:
    """The redirect issued the token (the task's URL holds none): the render asks the task's
    URL again by HEAD to find the page's real URL, and renders it there."""
    tasks = {"issued": {"url": signed_site.url("/issue"), "render": True}}
    assert await execute_async(CHAIN, tmp_path, tasks) == ["issued"]
    status = load_status(tmp_path, "issued")
    assert status is not None
    assert status["scrape"]["final_url"] == signed_site.url("/signed/page?token=***")
    assert "the signed data" in status["pages"]["text_start"]
    assert SECRET not in json.dumps([status["scrape"], status["render"]])
    assert signed_site.seen.count("GET /issue") == 1  # scrape's
    assert signed_site.seen.count("HEAD /issue") == 1  # the render's, for the real URL
    assert signed_site.seen.count(f"GET /signed/page?token={SECRET}") == 1  # scrape's only
