"""`ProxyProvider`: a proxy pool that knows where its proxies come from and how to check them.

Static providers fill `proxies` at construction; service providers set `_loads_from_service` and
implement `_fetch`, which `load()` calls once. Nothing a provider logs, raises or reprs holds a
credential.
"""

import asyncio
import logging
from typing import ClassVar, Unpack

import aiohttp

from scrapeflow_dagster.engine.proxies.check import (
    CHECK_CONCURRENCY,
    DEFAULT_CHECK_URL,
    find_alive_proxies,
)
from scrapeflow_dagster.engine.proxies.pool import ProxyPool, ProxyPoolOptions
from scrapeflow_dagster.engine.redact import redact

logger = logging.getLogger(__name__)


class ProxyProviderOptions(ProxyPoolOptions, total=False):
    """Keyword options every provider takes (see `ProxyProvider.__init__`)."""

    check_url: str


class ProxyProvider(ProxyPool):
    """A pool of proxies by country with health scores; subclasses say where proxies come from.

    Attributes:
        proxies: country -> fully qualified proxy URLs (`http://[user:pass@]ip:port`); the key is
            `"*"` or `""` for proxies without a country.
        bad_proxies: proxies currently benched (refreshed by `get_one_proxy`, `report_*`,
            `health` and `check_proxies`).
    """

    default_retries: ClassVar[int] = 5
    # Whether `load()` asks a service for the list; static providers are loaded at construction.
    _loads_from_service: ClassVar[bool] = False

    def __init__(
        self, *, check_url: str = DEFAULT_CHECK_URL, **options: Unpack[ProxyPoolOptions]
    ) -> None:
        """Create an empty pool.

        Args:
            check_url: URL fetched through each proxy by `check_proxies`.
            **options: `error_threshold`, `cooldown_seconds` and `clock`; see
                `ProxyPool.__init__`.

        Raises:
            ValueError: when `error_threshold` is not positive or `cooldown_seconds` is negative.
        """
        super().__init__(**options)
        self.check_url = check_url
        self._loaded = not self._loads_from_service
        self._load_lock = asyncio.Lock()

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in self._repr_fields().items())
        return f"{type(self).__name__}({fields})"

    def _repr_fields(self) -> dict[str, object]:
        return {
            "countries": sorted(self.proxies),
            "proxies": len(self._all_proxies()),
            "bad_proxies": len(self.bad_proxies),
            "error_threshold": self.error_threshold,
            "cooldown_seconds": self.cooldown_seconds,
            "check_url": redact(self.check_url),
        }

    async def _fetch(self, session: aiohttp.ClientSession) -> dict[str, list[str]]:
        return self.proxies

    async def load(self, session: aiohttp.ClientSession | None = None) -> None:
        """Fetch the proxy list from the service, once; a no-op for static lists.

        Args:
            session: HTTP session to ask the service with; a short-lived one is opened if `None`.

        Raises:
            ProxyServiceError: when the service answers with an error or cannot be reached.
        """
        if self._loaded:
            return
        async with self._load_lock:
            if self._loaded:
                return
            if session is None:
                async with aiohttp.ClientSession() as own_session:
                    fetched = await self._fetch(own_session)
            else:
                fetched = await self._fetch(session)
            self.proxies = fetched
            self._cursors.clear()
            self._loaded = True
        logger.info(
            "%s loaded %d proxies (%d country keys)",
            type(self).__name__,
            len(self._all_proxies()),
            len(self.proxies),
        )

    async def check_proxies(self, timeout: float = 30, retries: int = 5) -> None:
        """Fetch `check_url` through every proxy and bench the ones that never answer.

        Proxies are checked concurrently (at most `CHECK_CONCURRENCY` at once). A proxy passes
        on its first try that gets a status below 400; it is benched (for `cooldown_seconds`)
        when all tries fail. A passing proxy leaves the bench with a clean score.

        Args:
            timeout: bound in seconds on each try; the whole check is bounded by
                `timeout * retries` per wave of `CHECK_CONCURRENCY` proxies.
            retries: tries per proxy (at least one).

        Raises:
            ProxyServiceError: when the list must be loaded first and the service fails.
        """
        tries = max(1, retries)
        connector = aiohttp.TCPConnector(limit=CHECK_CONCURRENCY)
        async with aiohttp.ClientSession(connector=connector) as session:
            await self.load(session)
            candidates = self._all_proxies()
            if not candidates:
                return
            alive = await find_alive_proxies(
                session, candidates, check_url=self.check_url, timeout=timeout, tries=tries
            )
        self._apply_check(candidates, alive)
