"""A page of the run's browser over the DevTools pipe (`render.tab`), with the real Chromium:
every request of the page, of a frame of another site and of a worker held for the handler;
a dialog does not hold the page; a service worker is never registered (https: a secure
context, where pages may register one); a popup is closed; the URL follows `pushState`. The
hosts are names nothing resolves: every answer is the handler's."""

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from scrapeflow_dagster.engine.render.browser import CHROMIUM_CANDIDATES, RunBrowser
from scrapeflow_dagster.engine.render.tab import BrowserPage, PausedRequest
from scrapeflow_dagster.engine.settings import RenderSettings

PAGES = {
    "https://a.test/": b"""<!doctype html><title>start</title>
<script>alert('hello'); confirm('sure?');</script>
<iframe src="https://b.test/frame"></iframe>
<script>
new Worker('/worker.js');
navigator.serviceWorker.register('/sw.js').then(
  () => { document.title = 'registered'; }, () => { document.title = 'refused'; });
</script>
<h1>after the dialogs</h1>
<p id=popup></p>
<script>
const popup = window.open('https://c.test/');
document.getElementById('popup').textContent = popup ? 'opened' : 'blocked';
history.pushState({}, '', '/pushed');
</script>""",
    "https://b.test/frame": b"<!doctype html><script src='/in-frame.js'></script>",
    "https://b.test/in-frame.js": b"fetch('/from-frame')",
    "https://a.test/worker.js": b"fetch('/from-worker')",
}


@pytest.fixture(params=[path for path in CHROMIUM_CANDIDATES if os.access(path, os.X_OK)])
async def page(request: pytest.FixtureRequest) -> AsyncIterator[BrowserPage]:
    """A page of each installed Chromium (the full one isolates a frame of another site in a
    process of its own, a target of its own)."""
    browser = RunBrowser(RenderSettings(chromium_path=request.param), user_agent="test")
    try:
        async with browser.page() as opened:
            yield opened
    finally:
        await browser.aclose()


async def test_every_request_of_the_page_its_frames_and_workers_is_held(
    page: BrowserPage,
) -> None:
    seen: list[str] = []

    async def answer(request: PausedRequest) -> None:
        seen.append(request.url)
        body = PAGES.get(request.url, b"")
        kind = "text/html" if b"<" in body else "text/javascript"
        await request.fulfill(200, {"content-type": kind}, body)

    page.intercept(answer)
    await page.goto("https://a.test/", 10)  # the dialogs dismissed: the load came
    await asyncio.sleep(0.3)  # a popup's closing under way
    for _ in range(50):
        if {"https://b.test/from-frame", "https://a.test/from-worker"} <= set(seen):
            break
        await asyncio.sleep(0.1)
    html = await page.content()

    assert "<h1>after the dialogs</h1>" in html
    assert "<title>refused</title>" in html  # no service worker
    assert "https://a.test/sw.js" not in seen
    assert {"https://b.test/frame", "https://b.test/in-frame.js"} <= set(seen)
    assert "https://b.test/from-frame" in seen  # a frame of another site: its own process
    assert "https://a.test/from-worker" in seen
    # No popup stays open (the full Chromium blocks it, the headless shell's is closed): its
    # requests would be nobody's to hold.
    targets = (await page.pipe.send("Target.getTargets"))["targetInfos"]
    assert not [target for target in targets if target.get("openerId")]
    assert "https://c.test/" not in seen
    assert page.url == "https://a.test/pushed"  # where its script took it


async def test_a_page_serves_its_contexts_next_document_left_blank_between() -> None:
    """A page is kept for the context's next document (no target to make again), blank
    between two: a request of the first document never reaches the second's handler."""
    browser = RunBrowser(RenderSettings(pages_per_context=3), user_agent="test")
    seen: list[tuple[int, str]] = []

    def answering(n: int) -> Callable[[PausedRequest], Awaitable[None]]:
        async def answer(request: PausedRequest) -> None:
            seen.append((n, request.url))
            await request.fulfill(200, {"content-type": "text/html"}, f"<h1>{n}</h1>".encode())

        return answer

    targets = []
    try:
        for n in range(4):
            async with browser.page() as page:
                targets.append(page.target_id)
                page.intercept(answering(n))
                await page.goto(f"https://a.test/{n}", 10)
                assert f"<h1>{n}</h1>" in await page.content()
    finally:
        await browser.aclose()
    # The first three documents in one page; the fourth in a new context's page.
    assert targets[0] == targets[1] == targets[2] != targets[3]
    assert seen == [(n, f"https://a.test/{n}") for n in range(4)]
