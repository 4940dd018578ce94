"""One task's stored document rendered: loaded in the run's browser from the body `scrape`
stored, its requests through the gate (`routing`), then given time to settle; its DOM is what
`pages` and extraction read for the task."""

import asyncio
import time
from typing import NamedTuple

from scrapeflow_dagster.engine.errors import TransientRenderError
from scrapeflow_dagster.engine.render.browser import RunBrowser
from scrapeflow_dagster.engine.render.devtools import BrowserError
from scrapeflow_dagster.engine.render.routing import Document, GateRouter, RequestLog
from scrapeflow_dagster.engine.run.context import Context

# "Settled": no request of the page in flight, and none begun or ended, for this long. Shorter
# than Playwright's `networkidle` (500 ms), which made every page cost half a second more.
QUIET_SECONDS = 0.25
_POLL_SECONDS = 0.05


class Rendered(NamedTuple):
    """A rendered page: its DOM serialised, the URL it ended at, whether the network settled
    within the settings' time, its requests, and how long it took."""

    html: str
    final_url: str
    settled: bool
    requests: RequestLog
    seconds: float


async def render_document(
    context: Context, browser: RunBrowser, document: Document, *, trust: str
) -> Rendered:
    """Render `document` in `browser`, every request it makes through the gate as a request of
    `trust` (`PUBLIC` or `INTRANET`, the page's own).

    Raises:
        RenderError: no browser here.
        TransientRenderError: the document's load event did not come within the settings'
            `timeout_seconds`, or the browser failed meanwhile.
    """
    settings = context.settings.render
    started = time.monotonic()
    try:
        async with browser.page() as page:
            router = GateRouter(
                context,
                document,
                trust=trust,
                blocked_types=frozenset(settings.blocked_resources),
                main_frame_id=page.main_frame_id,
            )
            page.intercept(router.handle)
            try:
                try:
                    await page.goto(document.url, settings.timeout_seconds)
                except TimeoutError:
                    raise TransientRenderError(
                        f"the page did not load within {settings.timeout_seconds:g} s in the"
                        " browser"
                    ) from None
                except BrowserError as exc:
                    raise TransientRenderError(
                        f"the browser could not load the page: {exc}"
                    ) from None
                # The quiet is counted from the load event on: a request its scripts began
                # just before it may reach the router after it (measured: 1 page in 2,000
                # under load was read before its content's fetch arrived).
                router.last_activity = asyncio.get_running_loop().time()
                settled = await _settle(router, settings.settle_seconds)
                try:
                    async with asyncio.timeout(settings.timeout_seconds):
                        html = await page.content()
                except TimeoutError:
                    raise TransientRenderError(
                        f"the rendered page could not be read within {settings.timeout_seconds:g} s"
                    ) from None
                except BrowserError as exc:
                    raise TransientRenderError(
                        f"the rendered page could not be read: {exc}"
                    ) from None
                final_url = page.url
            finally:
                router.cancel_pending()
    except BrowserError as exc:  # the browser failed to open the page (crashed meanwhile)
        raise TransientRenderError(f"the browser failed: {exc}") from None
    return Rendered(html, final_url, settled, router.log, time.monotonic() - started)


async def _settle(router: GateRouter, seconds: float) -> bool:
    """Wait up to `seconds` for the page's network to go quiet (`QUIET_SECONDS` without a
    request); whether it did."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        now = loop.time()
        if router.in_flight == 0 and now - router.last_activity >= QUIET_SECONDS:
            return True
        if now >= deadline:
            return False
        await asyncio.sleep(_POLL_SECONDS)
