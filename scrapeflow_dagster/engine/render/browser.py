"""The browser of a run: one Chromium per run, started when the run's first page needs it and
closed with the run, driven by Playwright (the `browser` extra) from the run's event loop.

Chromium is launched unable to reach anything by itself: every request a page makes is
intercepted and answered through the gate (`routing`), and, should one escape interception (a
speculation rule's prefetch, a WebRTC TURN connection over TCP, WebTransport's QUIC), it goes
to a proxy that does not exist (`127.0.0.1:9`, loopback included) with no name resolution at
all (IP literals included), so it fails instead of going out; measured, each of the two alone
stops all three. WebRTC's UDP is neither proxied nor resolved: WebRTC may use only proxied
UDP (there is none), so a page's STUN packets and its ICE candidates' mDNS announcements never
leave. Service workers are blocked (their requests would not be routed) and WebSockets are
answered by nobody.

Memory stays flat by recycling: a browser context (its cookies, cache and renderer processes)
serves `pages_per_context` pages and is then replaced, closed once its last page is done; a
browser that crashed is started again for the next page. And it is kept low by the switches
below that cut what a browser costs besides its pages (`MEMORY_ARGS`).

One browser per run (per shard): a browser shared by the host's runs, its shards connecting over
CDP, was measured (2 and 4 shards) at 5-9% less PSS and 30-45% fewer pages per
second (every run's Playwright driver attaches to every page of a shared browser), and it needs
a DevTools port that any local user could reach: not shipped.
"""

import asyncio
import contextlib
import importlib.util
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from scrapeflow_dagster.engine.errors import RenderError
from scrapeflow_dagster.engine.render.choice import RenderChoices
from scrapeflow_dagster.engine.settings import BROWSER_EXTRA, RenderSettings

logger = logging.getLogger(__name__)

# A request that escaped interception goes here, and fails: nothing listens on the discard port.
_NOWHERE_PROXY = "http://127.0.0.1:9"
# WebRTC's IP handling policy: no UDP but through a proxy. Chrome reads the pref's switch
# (`--webrtc-ip-handling-policy`; measured on Chromium 156: a page's STUN packets to a loopback
# port, 5 without it, 0 with it), content_shell and the old headless shell the `--force-` one.
_NO_DIRECT_UDP = "disable_non_proxied_udp"
CHROMIUM_ARGS = (
    "--host-resolver-rules=MAP * ~NOTFOUND",  # no host resolves, an IP literal neither
    f"--webrtc-ip-handling-policy={_NO_DIRECT_UDP}",
    f"--force-webrtc-ip-handling-policy={_NO_DIRECT_UDP}",
    "--dns-prefetch-disable",
    "--disable-background-networking",  # no update checks, no safe-browsing fetches
    "--disable-component-update",
    "--disable-domain-reliability",
    "--no-pings",
    "--disable-dev-shm-usage",  # containers' /dev/shm is small
    "--disable-gpu",  # no GPU process: headless pages are rasterised on the CPU anyway
    "--disable-extensions",
)


# Playwright's own `--disable-features` and `--enable-features` lists (1.65): Chromium keeps
# only the last of each switch, so ours must repeat them (`test_browser_memory.py` checks that
# Playwright's are all still in force).
_PLAYWRIGHT_FEATURES_OFF = (
    "AimEnabled,AvoidCorsURLLoaderRestartOnRedirect,AvoidUnnecessaryBeforeUnloadCheckSync,"
    "DestroyProfileOnBrowserClose,HttpsFirstBalancedModeAutoEnable,HttpsUpgrades,LensOverlay,"
    "MediaRouter,NetworkTimeServiceQuerying,OptimizationHints,PaintHolding,PreconnectToSearch,"
    "TcpPortRandomizationWin,ThirdPartyStoragePartitioning,"
    "msEdgeUpdateLaunchServicesPreferredVersion,msForceBrowserSignIn"
)
_PLAYWRIGHT_FEATURES_ON = "CDPScreenshotNewSurface,SkipListAccountsWithoutGaiaCookies"
# What a browser costs before and besides its pages (measured on Chromium 156, 4 pages at once,
# `bench_render_peer`: PSS of the whole tree):
MEMORY_ARGS: tuple[str, ...] = (
    # The new headless mode builds the omnibox popup's WebUI in a renderer of its own: 70-130
    # MiB and busy CPU, for a popup no one sees.
    "--disable-features=" + _PLAYWRIGHT_FEATURES_OFF + ",WebUIOmniboxPopup,WebUIOmniboxAimPopup"
    ",WebUIOmniboxFullPopup,SpareRendererForSitePerProcess",
    # The network service in the browser process (a utility process less; there is no sandbox
    # to keep it in: Playwright launches Chromium with --no-sandbox).
    "--enable-features=" + _PLAYWRIGHT_FEATURES_ON + ",NetworkServiceInProcess2",
    # The pages of one site in one context share a renderer (4 pages at once: one renderer,
    # not 4 and a spare); another site, or another context, still gets its own.
    "--process-per-site",
    # No GPU process: with --disable-gpu it only composited in software, as the browser can.
    "--in-process-gpu",
)


def browser_missing() -> str | None:
    """Why no page can be rendered here (the `browser` extra missing), or None."""
    try:
        found = importlib.util.find_spec("playwright") is not None
    except ImportError:  # an import hook that refuses it
        found = False
    return None if found else f"rendering a page needs the browser extra: {BROWSER_EXTRA}"


def first_line(exc: BaseException) -> str:
    """The first line of a Playwright error (the rest is its call log)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else repr(exc)


class _Pool:
    """One browser context and how many of its pages are out or were served."""

    def __init__(self, context: Any) -> None:
        self.context = context
        self.served = 0
        self.open = 0


class RunBrowser:
    """The run's browser (see the module); `page()` hands out pages, `aclose()` ends it all.

    Nothing starts before the first `page()`: a run without a page to render costs nothing.
    """

    def __init__(
        self,
        settings: RenderSettings,
        *,
        user_agent: str,
        wait_guard: Callable[[], contextlib.AbstractContextManager[None]] | None = None,
    ) -> None:
        self.settings = settings
        self.user_agent = user_agent
        # Around the wait for a page's turn: it is not the step being slow (the run's deadlines).
        self._wait_guard = wait_guard or contextlib.nullcontext
        self._playwright: Any = None
        self._browser: Any = None
        self._pool: _Pool | None = None
        self._retiring: list[_Pool] = []
        self._lock = asyncio.Lock()
        self._open_pages = asyncio.Semaphore(settings.pages_at_once)
        # What the run learned of its URL patterns (`render: auto` tasks).
        self.choices = RenderChoices(wait_guard)

    async def _ensure_browser(self) -> None:
        if self._browser is not None and self._browser.is_connected():
            return
        missing = browser_missing()
        if missing is not None:
            raise RenderError(missing)
        from playwright.async_api import Error as PlaywrightError
        from playwright.async_api import async_playwright

        if self._playwright is None:
            self._playwright = await async_playwright().start()
        if self._browser is not None:
            logger.warning("the render browser was lost (crash?): starting a new one")
            self._pool = None
        try:
            self._browser = await self._playwright.chromium.launch(
                executable_path=self.settings.chromium_path,
                args=[*CHROMIUM_ARGS, *MEMORY_ARGS],
                proxy={"server": _NOWHERE_PROXY, "bypass": "<-loopback>"},
            )
        except PlaywrightError as exc:
            raise RenderError(
                f"the browser at {self.settings.chromium_path} did not start"
                f" ({first_line(exc)}); on Debian: apt-get install chromium"
            ) from None

    async def _current(self) -> _Pool:
        async with self._lock:
            await self._ensure_browser()
            if self._pool is not None and self._pool.served >= self.settings.pages_per_context:
                retired, self._pool = self._pool, None
                if retired.open:
                    self._retiring.append(retired)  # closed when its last page is
                else:  # nothing would close it before the run ends: a context kept alive
                    with contextlib.suppress(Exception):
                        await retired.context.close()
            if self._pool is None:
                context = await self._browser.new_context(
                    user_agent=self.user_agent,
                    service_workers="block",
                    accept_downloads=False,
                )
                # WebSockets: routed to a handler that never connects them anywhere.
                await context.route_web_socket("**/*", _refuse_web_socket)
                self._pool = _Pool(context)
            self._pool.served += 1
            self._pool.open += 1
            return self._pool

    async def _release(self, pool: _Pool) -> None:
        pool.open -= 1
        if pool.open == 0 and pool in self._retiring:
            self._retiring.remove(pool)
            with contextlib.suppress(Exception):  # a crashed browser took it with it
                await pool.context.close()

    @contextlib.asynccontextmanager
    async def page(self) -> AsyncIterator[Any]:
        """A new page (Playwright's `Page`) in the current context, closed after.

        At most `pages_at_once` pages are open at a time; a caller waits for its turn here.

        Raises:
            RenderError: no browser here (names the extra, or the Chromium that did not start).
        """
        with self._wait_guard():
            await self._open_pages.acquire()
        try:
            pool = await self._current()
            try:
                page = await pool.context.new_page()
            except Exception:
                await self._release(pool)
                raise
            try:
                yield page
            finally:
                with contextlib.suppress(Exception):  # closed with a crashed browser already
                    await page.close()
                await self._release(pool)
        finally:
            self._open_pages.release()

    async def aclose(self) -> None:
        """Close every context, the browser and Playwright's driver (idempotent)."""
        pools = [*self._retiring, *([self._pool] if self._pool else [])]
        self._retiring, self._pool = [], None
        for pool in pools:
            with contextlib.suppress(Exception):
                await pool.context.close()
        if self._browser is not None:
            with contextlib.suppress(Exception):
                await self._browser.close()
            self._browser = None
        if self._playwright is not None:
            with contextlib.suppress(Exception):
                await self._playwright.stop()
            self._playwright = None


async def _refuse_web_socket(web_socket: Any) -> None:
    """A page's WebSocket: never connected to a server (not through the gate), closed."""
    with contextlib.suppress(Exception):
        await web_socket.close(code=1008, reason="scrapeflow renders without WebSockets")
