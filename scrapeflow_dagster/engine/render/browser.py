"""The browser of a run: one Chromium per run, started when the run's first page needs it and
closed with the run, driven over its DevTools pipe (`devtools`) from the run's event loop.

Chromium is launched unable to reach anything by itself: every request a page makes is
intercepted and answered through the gate (`routing`), and, should one escape interception (a
speculation rule's prefetch, a WebRTC TURN connection over TCP, WebTransport's QUIC, a
WebSocket), it goes to a proxy that does not exist (`127.0.0.1:9`, loopback included) with no
name resolution at all (IP literals included), so it fails instead of going out; measured,
each of the two alone stops all three. WebRTC's UDP is neither proxied nor resolved: WebRTC
may use only proxied UDP (there is none), so a page's STUN packets and its ICE candidates' mDNS
announcements never leave. Service workers are never registered (their requests would not be
the page's).

No driver process stands between the run and its browser (Playwright's Node driver was 100-200
MiB of each shard's memory), and no DevTools port: the pipe is the run's alone. `render_chromium_
path: auto` drives Debian's headless shell when it is installed (what Playwright and Puppeteer
run headless by default: no browser UI to build, about half the browser process's memory),
else its Chromium.

Memory stays flat by recycling: a browser context (its cookies, cache and renderer processes)
serves `pages_per_context` pages and is then replaced, closed once its last page is done; a
browser that crashed is started again for the next page. And it is kept low by the switches
below that cut what a browser costs besides its pages (`MEMORY_ARGS`).

One browser per run (per shard): a browser shared by the host's runs, its shards connecting over
CDP, was measured (2 and 4 shards) at 5-9% less PSS and 30-45% fewer pages per
second, and it needs a DevTools port that any local user could reach: not shipped.
"""

import asyncio
import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from typing import Any

from scrapeflow_dagster.engine.errors import RenderError
from scrapeflow_dagster.engine.render.choice import RenderChoices
from scrapeflow_dagster.engine.render.devtools import BrowserError, DevToolsPipe
from scrapeflow_dagster.engine.render.tab import BrowserPage
from scrapeflow_dagster.engine.settings import AUTO_CHROMIUM, RenderSettings

logger = logging.getLogger(__name__)

# A page left for a blank one before its next document: within this long, else closed.
_BLANK_SECONDS = 5.0
# What `render_chromium_path: auto` drives, the first found: Debian's headless shell, then its
# Chromium.
CHROMIUM_CANDIDATES = ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium")
# A request that escaped interception goes here, and fails: nothing listens on the discard port.
_NOWHERE_PROXY = "http://127.0.0.1:9"
# WebRTC's IP handling policy: no UDP but through a proxy. Chrome reads the pref's switch
# (`--webrtc-ip-handling-policy`; measured on Chromium 156: a page's STUN packets to a loopback
# port, 5 without it, 0 with it), content_shell and the headless shell the `--force-` one.
_NO_DIRECT_UDP = "disable_non_proxied_udp"
CHROMIUM_ARGS = (
    "--host-resolver-rules=MAP * ~NOTFOUND",  # no host resolves, an IP literal neither
    f"--proxy-server={_NOWHERE_PROXY}",
    "--proxy-bypass-list=<-loopback>",  # loopback too goes to the nowhere proxy
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
# What an automated headless browser is launched with (Playwright's switches, 1.65): no first
# run, no background throttling of pages a crawl keeps in the background, no crash reporter,
# no sandbox (a page is data here, every request of it answered by the gate; as Playwright).
# Unlike Playwright, the popup blocker stays on (a crawl makes no user gesture, so a page's
# `window.open` is refused), and a popup that opens all the same is closed (`_browser_event`).
HEADLESS_ARGS = (
    "--headless",
    "--no-sandbox",
    "--no-startup-window",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-default-apps",
    "--disable-field-trial-config",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-renderer-backgrounding",
    "--disable-back-forward-cache",
    "--disable-breakpad",
    "--disable-component-extensions-with-background-pages",
    "--disable-hang-monitor",
    "--disable-ipc-flooding-protection",
    "--disable-prompt-on-repost",
    "--disable-search-engine-choice-screen",
    "--allow-pre-commit-input",
    "--force-color-profile=srgb",
    "--metrics-recording-only",
    "--password-store=basic",
    "--use-mock-keychain",
    "--no-service-autorun",
    "--hide-scrollbars",
    "--mute-audio",
)
# Features off: what Playwright turns off for automation (HTTP kept on HTTP, no third-party
# storage partitioning, no paint holding, no calls home), then what costs memory (below).
_FEATURES_OFF = (
    "AimEnabled,AvoidCorsURLLoaderRestartOnRedirect,AvoidUnnecessaryBeforeUnloadCheckSync,"
    "DestroyProfileOnBrowserClose,HttpsFirstBalancedModeAutoEnable,HttpsUpgrades,LensOverlay,"
    "MediaRouter,NetworkTimeServiceQuerying,OptimizationHints,PaintHolding,PreconnectToSearch,"
    "ThirdPartyStoragePartitioning"
)
# What a browser costs before and besides its pages (measured on Chromium 156, 4 pages at once,
# `bench_render_peer`: PSS of the whole tree):
MEMORY_ARGS: tuple[str, ...] = (
    # The new headless mode builds the omnibox popup's WebUI in a renderer of its own: 70-130
    # MiB and busy CPU, for a popup no one sees.
    "--disable-features=" + _FEATURES_OFF + ",WebUIOmniboxPopup,WebUIOmniboxAimPopup"
    ",WebUIOmniboxFullPopup,SpareRendererForSitePerProcess",
    # The network service in the browser process (a utility process less; there is no sandbox
    # to keep it in).
    "--enable-features=NetworkServiceInProcess2",
    # The pages of one site in one context share a renderer (4 pages at once: one renderer,
    # not 4 and a spare); another site, or another context, still gets its own.
    "--process-per-site",
    # No GPU process: with --disable-gpu it only composited in software, as the browser can.
    "--in-process-gpu",
    # No second zygote: it forks the unsandboxed utility processes, and with the network
    # service and the GPU in the browser there are none (a zygote's 15 MiB PSS).
    "--no-unsandboxed-zygote",
)


def chromium_executable(settings: RenderSettings) -> str | None:
    """The Chromium `settings` drive (`auto`: the first of `CHROMIUM_CANDIDATES` installed),
    or None when `auto` finds none."""
    if settings.chromium_path != AUTO_CHROMIUM:
        return settings.chromium_path
    return next((path for path in CHROMIUM_CANDIDATES if os.access(path, os.X_OK)), None)


def browser_missing(settings: RenderSettings | None = None) -> str | None:
    """Why no page can be rendered here (no Chromium installed), or None."""
    executable = chromium_executable(settings or RenderSettings())
    if executable is not None and os.access(executable, os.X_OK):
        return None
    where = executable or " or ".join(CHROMIUM_CANDIDATES)
    return (
        f"rendering a page needs a Chromium: {where} is not installed"
        " (render_chromium_path; on Debian: apt-get install chromium-headless-shell)"
    )


class _Pool:
    """One browser context, how many of its pages are out or were served, and its pages kept
    blank for the next documents."""

    def __init__(self, context_id: str) -> None:
        self.context_id = context_id
        self.served = 0
        self.open = 0
        self.idle: list[BrowserPage] = []

    def forget_idle(self) -> None:
        """Let go of the pages kept blank: the context's disposal closes them."""
        for page in self.idle:
            page.forget()
        self.idle.clear()


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
        self._pipe: DevToolsPipe | None = None
        self._profile: str | None = None
        self._pool: _Pool | None = None
        self._retiring: list[_Pool] = []
        self._lock = asyncio.Lock()
        self._open_pages = asyncio.Semaphore(settings.pages_at_once)
        self._background: set[asyncio.Task[None]] = set()  # popups being closed
        # What the run learned of its URL patterns (`render: auto` tasks).
        self.choices = RenderChoices(wait_guard)

    @property
    def pid(self) -> int | None:
        """The browser process's id while it runs (None before, or once closed)."""
        return self._pipe.pid if self._pipe is not None and self._pipe.connected else None

    async def _ensure_browser(self) -> DevToolsPipe:
        if self._pipe is not None and self._pipe.connected:
            return self._pipe
        missing = browser_missing(self.settings)
        if missing is not None:
            raise RenderError(missing)
        if self._pipe is not None:
            logger.warning("the render browser was lost (crash?): starting a new one")
            self._pool, self._retiring = None, []
            await self._close_browser()
        executable = chromium_executable(self.settings)
        assert executable is not None  # browser_missing said so
        self._profile = tempfile.mkdtemp(prefix="scrapeflow-chromium-")
        args = [*HEADLESS_ARGS, *CHROMIUM_ARGS, *MEMORY_ARGS, f"--user-data-dir={self._profile}"]
        try:
            self._pipe = await DevToolsPipe.launch(executable, args)
        except BaseException as exc:
            await asyncio.shield(self._close_browser())  # its profile too
            if not isinstance(exc, BrowserError):
                raise
            raise RenderError(
                f"the browser at {executable} did not start ({exc}); on Debian:"
                " apt-get install chromium-headless-shell"
            ) from None
        # Popups: the headless shell has no popup blocker, and a popup's requests would be
        # nobody's to hold (they go to the nowhere proxy): each is closed as it opens.
        self._pipe.on("", self._browser_event)
        try:
            await self._pipe.send(
                "Target.setDiscoverTargets", {"discover": True, "filter": [{"type": "page"}]}
            )
        except BrowserError as exc:
            await self._close_browser()
            raise RenderError(f"the browser at {executable} failed at its start ({exc})") from None
        return self._pipe

    def _browser_event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Target.targetCreated" and params["targetInfo"].get("openerId"):
            target_id = params["targetInfo"]["targetId"]
            task = asyncio.ensure_future(self._close_popup(target_id))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _close_popup(self, target_id: str) -> None:
        if self._pipe is not None:
            with contextlib.suppress(BrowserError):
                await self._pipe.send("Target.closeTarget", {"targetId": target_id})

    async def _current(self) -> tuple[DevToolsPipe, _Pool]:
        async with self._lock:
            pipe = await self._ensure_browser()
            if self._pool is not None and self._pool.served >= self.settings.pages_per_context:
                retired, self._pool = self._pool, None
                retired.forget_idle()
                if retired.open:
                    self._retiring.append(retired)  # closed when its last page is
                else:  # nothing would close it before the run ends: a context kept alive
                    await self._dispose(retired)
            if self._pool is None:
                created = await pipe.send("Target.createBrowserContext", {"disposeOnDetach": True})
                context_id = created["browserContextId"]
                # A page's download (a link it clicks, an answer it is given to save) is
                # never saved.
                await pipe.send(
                    "Browser.setDownloadBehavior",
                    {"behavior": "deny", "browserContextId": context_id},
                )
                self._pool = _Pool(context_id)
            self._pool.served += 1
            self._pool.open += 1
            return pipe, self._pool

    async def _dispose(self, pool: _Pool) -> None:
        if self._pipe is not None:
            with contextlib.suppress(BrowserError):  # a crashed browser took it with it
                await self._pipe.send(
                    "Target.disposeBrowserContext", {"browserContextId": pool.context_id}
                )

    async def _release(self, pool: _Pool) -> None:
        pool.open -= 1
        if pool.open == 0 and pool in self._retiring:
            self._retiring.remove(pool)
            await asyncio.shield(self._dispose(pool))

    @contextlib.asynccontextmanager
    async def page(self) -> AsyncIterator[BrowserPage]:
        """A new page (`tab.BrowserPage`) in the current context, closed after.

        At most `pages_at_once` pages are open at a time; a caller waits for its turn here.

        Raises:
            RenderError: no browser here (names the Chromium missing, or the one that did
                not start).
            BrowserError: the browser failed to open the page.
        """
        with self._wait_guard():
            await self._open_pages.acquire()
        try:
            pipe, pool = await self._current()
            try:
                page = self._idle_page(pool) or await BrowserPage.open(
                    pipe, pool.context_id, self.user_agent
                )
            except BaseException:
                await self._release(pool)
                raise
            try:
                yield page
            finally:
                try:
                    await self._keep_or_close(pool, page)
                finally:
                    await self._release(pool)
        finally:
            self._open_pages.release()

    @staticmethod
    def _idle_page(pool: _Pool) -> BrowserPage | None:
        """A page of `pool` kept blank for its next document (one whose renderer crashed
        meanwhile is dropped), or None."""
        while pool.idle:
            page = pool.idle.pop()
            if page.usable:
                return page
            page.forget()
        return None

    async def _keep_or_close(self, pool: _Pool, page: BrowserPage) -> None:
        """Keep `page` for its context's next document, left blank (a page is a target to
        create and attach, and its first document a renderer process of its own before the
        site's: measured, one more renderer at most moments), or close it when it crashed or
        its context is retired."""
        task = asyncio.current_task()
        cancelled = task is not None and task.cancelling() > 0
        if page.usable and pool is self._pool and not cancelled:
            try:
                await page.blank(_BLANK_SECONDS)
            except (BrowserError, TimeoutError):
                pass
            except BaseException:  # cancelled meanwhile
                await asyncio.shield(page.close())
                raise
            else:
                if pool is self._pool:  # still current once blank
                    pool.idle.append(page)
                    return
        await asyncio.shield(page.close())

    async def _close_browser(self) -> None:
        pipe, self._pipe = self._pipe, None
        if pipe is not None:
            await pipe.close()
        profile, self._profile = self._profile, None
        if profile is not None:
            shutil.rmtree(profile, ignore_errors=True)

    async def aclose(self) -> None:
        """Close every context and the browser, and remove its profile (idempotent)."""
        pools = [*self._retiring, *([self._pool] if self._pool else [])]
        self._retiring, self._pool = [], None
        for pool in pools:
            pool.forget_idle()
            await self._dispose(pool)
        await self._close_browser()
