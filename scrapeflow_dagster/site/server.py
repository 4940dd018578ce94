"""Serve the local test website on 127.0.0.1: async context manager, background thread, or CLI."""

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Self

from aiohttp import web

from scrapeflow_dagster.site.app import FaultRates, build_site
from scrapeflow_dagster.site.content.changing import DEFAULT_CHANGING_PAGES
from scrapeflow_dagster.site.crawling.graph import DEFAULT_GRAPH_SIZE

DEFAULT_HOST = "127.0.0.1"
# A short grace period so stopping a site is not held up by `/slow` requests still sleeping.
_SHUTDOWN_TIMEOUT_SECONDS = 1.0
# Benchmarks open hundreds of connections at once; the default backlog of 128 drops SYNs.
_BACKLOG = 1024


class LocalSite:
    """The site running on this event loop; `async with LocalSite() as site: site.url("/health")`.

    Port 0 (the default) binds a free port, read back from the socket once started.
    """

    def __init__(
        self,
        *,
        host: str = DEFAULT_HOST,
        port: int = 0,
        pages: int = 1000,
        page_bytes: int = 20_000,
        seed: int = 0,
        fault_rates: FaultRates | None = None,
        graph_size: int = DEFAULT_GRAPH_SIZE,
        graph_delay_seconds: float = 0.0,
        crawl_delay_seconds: float | None = None,
        sitemap_in_robots: bool = False,
        internal_url: str | None = None,
        internal_base: str | None = None,
        other_origin: str | None = None,
        cross_submit: Sequence[str] = (),
        changing_pages: int = DEFAULT_CHANGING_PAGES,
        changing_rates: Sequence[float] | None = None,
    ) -> None:
        self.host = host
        self.app = build_site(
            pages=pages,
            page_bytes=page_bytes,
            seed=seed,
            fault_rates=fault_rates,
            graph_size=graph_size,
            graph_delay_seconds=graph_delay_seconds,
            crawl_delay_seconds=crawl_delay_seconds,
            sitemap_in_robots=sitemap_in_robots,
            internal_url=internal_url,
            internal_base=internal_base,
            other_origin=other_origin,
            cross_submit=cross_submit,
            changing_pages=changing_pages,
            changing_rates=changing_rates,
        )
        self._requested_port = port
        self._port: int | None = None
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> Self:
        """Start listening.

        Raises:
            OSError: when the address is in use or cannot be bound.
        """
        runner = web.AppRunner(
            self.app,
            access_log=None,
            handler_cancellation=True,
            shutdown_timeout=_SHUTDOWN_TIMEOUT_SECONDS,
        )
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self._requested_port, backlog=_BACKLOG)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self._port = int(runner.addresses[0][1])
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop listening and close open connections."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def port(self) -> int:
        """The bound port.

        Raises:
            RuntimeError: when the site is not running.
        """
        if self._port is None:
            raise RuntimeError("the site is not running; use `async with LocalSite() as site`")
        return self._port

    @property
    def base_url(self) -> str:
        """The site's root, e.g. `http://127.0.0.1:43123`, without a trailing slash."""
        return f"http://{self.host}:{self.port}"

    def url(self, path: str) -> str:
        """The absolute URL of `path` (e.g. `/page/3`) on this site."""
        return self.base_url + (path if path.startswith("/") else "/" + path)


class SiteThread:
    """The site running on its own event loop in a background thread, for synchronous code.

    `with SiteThread(pages=100) as site: requests.get(site.url("/page/1"))`
    """

    def __init__(
        self,
        *,
        host: str = DEFAULT_HOST,
        port: int = 0,
        pages: int = 1000,
        page_bytes: int = 20_000,
        seed: int = 0,
        fault_rates: FaultRates | None = None,
        graph_size: int = DEFAULT_GRAPH_SIZE,
        graph_delay_seconds: float = 0.0,
        crawl_delay_seconds: float | None = None,
        sitemap_in_robots: bool = False,
        internal_url: str | None = None,
        internal_base: str | None = None,
        other_origin: str | None = None,
        cross_submit: Sequence[str] = (),
        changing_pages: int = DEFAULT_CHANGING_PAGES,
        changing_rates: Sequence[float] | None = None,
        startup_timeout_seconds: float = 10.0,
    ) -> None:
        self._site = LocalSite(
            host=host,
            port=port,
            pages=pages,
            page_bytes=page_bytes,
            seed=seed,
            fault_rates=fault_rates,
            graph_size=graph_size,
            graph_delay_seconds=graph_delay_seconds,
            crawl_delay_seconds=crawl_delay_seconds,
            sitemap_in_robots=sitemap_in_robots,
            internal_url=internal_url,
            internal_base=internal_base,
            other_origin=other_origin,
            cross_submit=cross_submit,
            changing_pages=changing_pages,
            changing_rates=changing_rates,
        )
        self._startup_timeout_seconds = startup_timeout_seconds
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="scrapeflow-local-site", daemon=True)

    def __enter__(self) -> Self:
        """Start the thread and wait until the site listens.

        Raises:
            OSError: when the address cannot be bound.
            TimeoutError: when the site does not start within `startup_timeout_seconds`.
        """
        self._thread.start()
        if not self._ready.wait(self._startup_timeout_seconds):
            raise TimeoutError("the local site did not start in time")
        if self._error is not None:
            self._thread.join()
            raise self._error
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop the site and join the thread."""
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join()

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as error:  # handed to the thread that called __enter__
            self._error = error
            self._ready.set()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        async with self._site:
            self._loop = asyncio.get_running_loop()
            self._ready.set()
            await self._stop.wait()

    @property
    def base_url(self) -> str:
        """The site's root, e.g. `http://127.0.0.1:43123`, without a trailing slash."""
        return self._site.base_url

    def url(self, path: str) -> str:
        """The absolute URL of `path` (e.g. `/page/3`) on this site."""
        return self._site.url(path)


def run_site_forever(
    host: str = DEFAULT_HOST,
    port: int = 8765,
    *,
    pages: int = 1000,
    page_bytes: int = 20_000,
    seed: int = 0,
    fault_rates: FaultRates | None = None,
    graph_size: int = DEFAULT_GRAPH_SIZE,
    graph_delay_seconds: float = 0.0,
    crawl_delay_seconds: float | None = None,
    internal_url: str | None = None,
    internal_base: str | None = None,
    other_origin: str | None = None,
    cross_submit: Sequence[str] = (),
    changing_pages: int = DEFAULT_CHANGING_PAGES,
    changing_rates: Sequence[float] | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the site until Ctrl+C or SIGTERM; blocks the calling thread.

    Args:
        host: the address to bind; keep the loopback default unless you mean to expose it.
        port: the port to bind (0 picks a free one).
        pages: see `build_site`.
        page_bytes: see `build_site`.
        seed: see `build_site`.
        fault_rates: see `build_site`.
        graph_size: see `build_site`.
        graph_delay_seconds: see `build_site`.
        crawl_delay_seconds: see `build_site`.
        internal_url: see `build_site`.
        internal_base: see `build_site`.
        other_origin: see `build_site`.
        cross_submit: see `build_site`.
        changing_pages: see `build_site`.
        changing_rates: see `build_site`.
        on_ready: called with the base URL once the site listens (the CLI prints it).

    Raises:
        OSError: when the address cannot be bound.
    """
    site = LocalSite(
        host=host,
        port=port,
        pages=pages,
        page_bytes=page_bytes,
        seed=seed,
        fault_rates=fault_rates,
        graph_size=graph_size,
        graph_delay_seconds=graph_delay_seconds,
        crawl_delay_seconds=crawl_delay_seconds,
        internal_url=internal_url,
        internal_base=internal_base,
        other_origin=other_origin,
        cross_submit=cross_submit,
        changing_pages=changing_pages,
        changing_rates=changing_rates,
    )

    async def serve() -> None:
        stop = asyncio.Event()
        with contextlib.suppress(NotImplementedError, RuntimeError):  # Windows, non-main thread
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        async with site:
            if on_ready is not None:
                on_ready(site.base_url)
            await stop.wait()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass
