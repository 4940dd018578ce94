"""Proxy pools with health scores, cooldown and country fallback (scrapeflow's `ProxyProvider`).

A provider holds `proxies` by country and benches a proxy whose error score reaches the threshold;
after `cooldown_seconds` the proxy comes back half-open, one failure away from the bench again.
Every piece of state is per instance (scrapeflow kept it on the class, shared by all providers).
Nothing a provider logs, raises, reprs or reports in `health()` holds a credential.
"""

import asyncio
import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, TypedDict, Unpack

import aiohttp

from scrapeflow_dagster.engine.errors import ErrorKind
from scrapeflow_dagster.engine.proxy_services import (
    ProxyServiceError,
    fetch_iproyal,
    fetch_proxyscrape,
    fetch_webshare,
)
from scrapeflow_dagster.engine.redact import proxy_host, redact

__all__ = [
    "FAILURE_WEIGHTS",
    "ProxyHealth",
    "ProxyProvider",
    "ProxyProviderFromDict",
    "ProxyProviderFromIPRoyal",
    "ProxyProviderFromList",
    "ProxyProviderFromProxyscrape",
    "ProxyProviderFromWebshare",
    "ProxyProviderOptions",
    "ProxyServiceError",
]

logger = logging.getLogger(__name__)

DEFAULT_CHECK_URL = "http://www.gstatic.com/generate_204"
CHECK_CONCURRENCY = 50
# How much one failure of each kind adds to a proxy's error score; PERMANENT is the target's fault.
FAILURE_WEIGHTS: dict[ErrorKind, float] = {
    ErrorKind.PROXY: 1.0,
    ErrorKind.BLOCKED: 1.0,
    ErrorKind.TRANSIENT: 0.25,
    ErrorKind.PERMANENT: 0.0,
}
# A re-admitted proxy sits this far under the threshold: its next failure of any kind benches it.
_HALF_OPEN_MARGIN = min(weight for weight in FAILURE_WEIGHTS.values() if weight > 0)
_EPSILON = 1e-9
# Key of the pool of every proxy, used when no country is asked and there is no "*" or "" list.
_ANY_COUNTRY = "\x00any"


@dataclass(frozen=True)
class ProxyHealth:
    """What we know of one proxy, safe to log or record (no URL, no credentials).

    Attributes:
        score: error score; the proxy is benched when it reaches the provider's threshold.
        benched: whether the proxy is currently benched (in `bad_proxies`).
        benched_until: when the bench ends, in the provider clock's seconds (`None` if not benched
            or benched with no end, as when a caller adds it to `bad_proxies` by hand).
        failures: failures reported or checks failed.
        successes: successes reported or checks passed.
    """

    score: float
    benched: bool
    benched_until: float | None
    failures: int
    successes: int


@dataclass
class _ProxyState:
    score: float = 0.0
    benched_until: float | None = None
    failures: int = 0
    successes: int = 0


class ProxyProviderOptions(TypedDict, total=False):
    """Keyword options every provider takes (see `ProxyProvider.__init__`)."""

    error_threshold: float
    cooldown_seconds: float
    check_url: str
    clock: Callable[[], float]


def _qualify(proxy: str) -> str:
    proxy = proxy.strip()
    return proxy if "://" in proxy else f"http://{proxy}"


class ProxyProvider:
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
        self,
        *,
        error_threshold: float = 3.0,
        cooldown_seconds: float = 300.0,
        check_url: str = DEFAULT_CHECK_URL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Create an empty pool.

        Args:
            error_threshold: error score at which a proxy is benched.
            cooldown_seconds: how long a benched proxy stays out before it is re-admitted.
            check_url: URL fetched through each proxy by `check_proxies`.
            clock: monotonic clock in seconds (injectable for tests).

        Raises:
            ValueError: when `error_threshold` is not positive or `cooldown_seconds` is negative.
        """
        if error_threshold <= 0:
            raise ValueError(f"error_threshold must be positive, got {error_threshold}")
        if cooldown_seconds < 0:
            raise ValueError(f"cooldown_seconds must not be negative, got {cooldown_seconds}")
        self.proxies: dict[str, list[str]] = {}
        self.bad_proxies: set[str] = set()
        self.error_threshold = error_threshold
        self.cooldown_seconds = cooldown_seconds
        self.check_url = check_url
        self._clock = clock
        self._states: dict[str, _ProxyState] = {}
        self._cursors: dict[str, int] = {}
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
            waves = math.ceil(len(candidates) / CHECK_CONCURRENCY)
            alive = await self._check_all(
                session, candidates, timeout=timeout, tries=tries, deadline=timeout * tries * waves
            )
        self._apply_check(candidates, alive)

    async def _check_all(
        self,
        session: aiohttp.ClientSession,
        candidates: list[str],
        *,
        timeout: float,
        tries: int,
        deadline: float,
    ) -> set[str]:
        semaphore = asyncio.Semaphore(CHECK_CONCURRENCY)
        tasks = {
            asyncio.create_task(self._check_one(session, semaphore, proxy, timeout, tries)): proxy
            for proxy in candidates
        }
        try:
            # A little slack over the sum of tries so a try that just made it is not cut off.
            done, _ = await asyncio.wait(tasks, timeout=deadline + timeout)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        alive: set[str] = set()
        for task in done:
            if task.cancelled():
                continue
            if (error := task.exception()) is not None:
                raise error  # a bug, not a dead proxy: _probe catches network errors
            if task.result():
                alive.add(tasks[task])
        return alive

    async def _check_one(
        self,
        session: aiohttp.ClientSession,
        semaphore: asyncio.Semaphore,
        proxy: str,
        timeout: float,
        tries: int,
    ) -> bool:
        async with semaphore:
            for _ in range(tries):
                if await self._probe(session, proxy, timeout):
                    return True
            return False

    async def _probe(self, session: aiohttp.ClientSession, proxy: str, timeout: float) -> bool:
        try:
            # aiohttp's own timeout does not cover every stage of a proxied request; this does.
            async with asyncio.timeout(timeout):
                async with session.get(
                    self.check_url,
                    proxy=proxy,
                    timeout=aiohttp.ClientTimeout(total=timeout),
                    allow_redirects=False,
                ) as response:
                    status = response.status
        except TimeoutError:
            logger.debug("proxy %s failed a check: no answer in %s s", proxy_host(proxy), timeout)
            return False
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            reason = redact(f"{type(exc).__name__}: {exc}")
            logger.debug("proxy %s failed a check: %s", proxy_host(proxy), reason)
            return False
        if status >= 400:
            logger.debug("proxy %s failed a check: HTTP %d", proxy_host(proxy), status)
        return status < 400

    def _apply_check(self, candidates: list[str], alive: set[str]) -> None:
        now = self._clock()
        for proxy in candidates:
            state = self._state(proxy)
            if proxy in alive:
                state.successes += 1
                state.score = 0.0
                state.benched_until = None
                self.bad_proxies.discard(proxy)
            else:
                state.failures += 1
                state.score = max(state.score, self.error_threshold)
                self._bench(proxy, state, now, reason="failed the check")
        logger.info("proxy check: %d of %d proxies alive", len(alive), len(candidates))

    def get_one_proxy(self, country: str | None = None) -> str | None:
        """Return a healthy proxy, rotating through the pool (round robin).

        Looks in `country`'s list, then in `"*"`, then in `""`; with no country and neither of
        those lists, in every proxy. A benched proxy is never returned before its cooldown ends.

        Args:
            country: country code as the provider's list spells it, or `None` for any.

        Returns:
            A fully qualified proxy URL, or `None` when no healthy proxy is left.
        """
        now = self._clock()
        for key in self._candidate_keys(country):
            proxy = self._next_healthy(key, now)
            if proxy is not None:
                return proxy
        return None

    def _candidate_keys(self, country: str | None) -> list[str]:
        keys = [country] if country else []
        keys += [key for key in ("*", "") if key not in keys]
        if country is None and not any(self.proxies.get(key) for key in ("*", "")):
            keys.append(_ANY_COUNTRY)
        return keys

    def _pool(self, key: str) -> list[str]:
        return self._all_proxies() if key == _ANY_COUNTRY else self.proxies.get(key, [])

    def _next_healthy(self, key: str, now: float) -> str | None:
        pool = self._pool(key)
        if not pool:
            return None
        start = self._cursors.get(key, 0) % len(pool)
        for offset in range(len(pool)):
            index = (start + offset) % len(pool)
            if self._available(pool[index], now):
                self._cursors[key] = index + 1
                return pool[index]
        return None

    def _available(self, proxy: str, now: float) -> bool:
        self._readmit_if_due(proxy, now)
        return proxy not in self.bad_proxies

    def report_failure(self, proxy: str, kind: ErrorKind) -> None:
        """Charge a failed request to `proxy`; bench it once its score reaches the threshold.

        Args:
            proxy: the proxy URL the request went through.
            kind: what went wrong; see `FAILURE_WEIGHTS` for what each kind costs.
        """
        now = self._clock()
        self._readmit_if_due(proxy, now)
        state = self._state(proxy)
        state.failures += 1
        state.score += FAILURE_WEIGHTS[kind]
        if proxy not in self.bad_proxies and state.score >= self.error_threshold - _EPSILON:
            self._bench(proxy, state, now, reason=f"score {state.score:.2f} after {kind}")

    def report_success(self, proxy: str) -> None:
        """Record a request that worked through `proxy`: its error score halves.

        Args:
            proxy: the proxy URL the request went through.
        """
        self._readmit_if_due(proxy, self._clock())
        state = self._state(proxy)
        state.successes += 1
        state.score /= 2

    def health(self) -> dict[str, ProxyHealth]:
        """Health of every known proxy, keyed by `host:port` (never credentials).

        Proxies sharing a `host:port` (different users on one gateway) get `#2`, `#3`... suffixes.
        """
        now = self._clock()
        report: dict[str, ProxyHealth] = {}
        for proxy in dict.fromkeys([*self._all_proxies(), *self._states, *self.bad_proxies]):
            self._readmit_if_due(proxy, now)
            state = self._states.get(proxy, _ProxyState())
            benched = proxy in self.bad_proxies
            key = base = proxy_host(proxy) or "invalid-proxy-url"
            suffix = 2
            while key in report:
                key, suffix = f"{base}#{suffix}", suffix + 1
            report[key] = ProxyHealth(
                score=state.score,
                benched=benched,
                benched_until=state.benched_until if benched else None,
                failures=state.failures,
                successes=state.successes,
            )
        return report

    def _all_proxies(self) -> list[str]:
        return list(dict.fromkeys(proxy for pool in self.proxies.values() for proxy in pool))

    def _state(self, proxy: str) -> _ProxyState:
        return self._states.setdefault(proxy, _ProxyState())

    def _bench(self, proxy: str, state: _ProxyState, now: float, *, reason: str) -> None:
        self.bad_proxies.add(proxy)
        state.benched_until = now + self.cooldown_seconds
        logger.warning(
            "proxy %s benched for %.0f s: %s", proxy_host(proxy), self.cooldown_seconds, reason
        )

    def _readmit_if_due(self, proxy: str, now: float) -> None:
        if proxy not in self.bad_proxies:
            return
        state = self._states.get(proxy)
        if state is None or state.benched_until is None or now < state.benched_until:
            return
        self.bad_proxies.discard(proxy)
        state.benched_until = None
        state.score = max(0.0, self.error_threshold - _HALF_OPEN_MARGIN)
        logger.info("proxy %s re-admitted after its cooldown (half-open)", proxy_host(proxy))


class ProxyProviderFromList(ProxyProvider):
    """Proxies given as a list, without countries (they live under `""`)."""

    def __init__(self, proxies: list[str], **options: Unpack[ProxyProviderOptions]) -> None:
        """Create a pool from `proxies`.

        Args:
            proxies: proxy URLs; `ip:port` without a scheme is taken as `http://ip:port`.
            **options: see `ProxyProvider.__init__`.
        """
        super().__init__(**options)
        self.proxies = {"": [_qualify(proxy) for proxy in proxies]}


class ProxyProviderFromDict(ProxyProvider):
    """Proxies given by country; `"*"` holds the ones to use when no country is asked."""

    def __init__(
        self, proxies: dict[str, list[str]], **options: Unpack[ProxyProviderOptions]
    ) -> None:
        """Create a pool from `proxies`.

        Args:
            proxies: country -> proxy URLs; `ip:port` without a scheme is taken as `http://`.
            **options: see `ProxyProvider.__init__`.
        """
        super().__init__(**options)
        self.proxies = {
            country: [_qualify(proxy) for proxy in pool] for country, pool in proxies.items()
        }


class ProxyProviderFromProxyscrape(ProxyProvider):
    """Proxyscrape's free list, fetched by `load()`; run `check_proxies()` before using it."""

    _loads_from_service = True

    def __init__(
        self,
        *,
        base_url: str = "https://api.proxyscrape.com",
        country: str = "all",
        timeout_ms: int = 10000,
        **options: Unpack[ProxyProviderOptions],
    ) -> None:
        """Create an unloaded pool.

        Args:
            base_url: API root (a local fake in tests).
            country: the service's country filter; `all` for every country.
            timeout_ms: the service's filter: leave out proxies slower than this.
            **options: see `ProxyProvider.__init__`.
        """
        super().__init__(**options)
        self.base_url = base_url
        self.country = country
        self.timeout_ms = timeout_ms

    def _repr_fields(self) -> dict[str, object]:
        return {"base_url": redact(self.base_url), "country": self.country} | super()._repr_fields()

    async def _fetch(self, session: aiohttp.ClientSession) -> dict[str, list[str]]:
        return await fetch_proxyscrape(
            session, base_url=self.base_url, country=self.country, timeout_ms=self.timeout_ms
        )


class ProxyProviderFromWebshare(ProxyProvider):
    """The direct proxies of a Webshare account, fetched by `load()`."""

    _loads_from_service = True

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str = "https://proxy.webshare.io",
        page_size: int = 100,
        **options: Unpack[ProxyProviderOptions],
    ) -> None:
        """Create an unloaded pool.

        Args:
            api_key: Webshare API key; read from `WEBSHARE_API_KEY` when `None`.
            base_url: API root (a local fake in tests).
            page_size: proxies asked for per page of the list.
            **options: see `ProxyProvider.__init__`.

        Raises:
            ValueError: when no API key is given and `WEBSHARE_API_KEY` is unset or empty.
        """
        super().__init__(**options)
        key = api_key or os.environ.get("WEBSHARE_API_KEY")
        if not key:
            raise ValueError("Webshare needs an API key: pass api_key= or set WEBSHARE_API_KEY")
        self._api_key = key
        self.base_url = base_url
        self.page_size = page_size

    def _repr_fields(self) -> dict[str, object]:
        return {"base_url": redact(self.base_url)} | super()._repr_fields()

    async def _fetch(self, session: aiohttp.ClientSession) -> dict[str, list[str]]:
        return await fetch_webshare(
            session, api_key=self._api_key, base_url=self.base_url, page_size=self.page_size
        )


class ProxyProviderFromIPRoyal(ProxyProvider):
    """The proxies of one IPRoyal reseller order, fetched by `load()`."""

    _loads_from_service = True

    def __init__(
        self,
        *,
        api_key: str | None = None,
        order_id: str | None = None,
        base_url: str = "https://apid.iproyal.com",
        **options: Unpack[ProxyProviderOptions],
    ) -> None:
        """Create an unloaded pool.

        Args:
            api_key: IPRoyal API token; read from `IPROYAL_API_KEY` when `None`.
            order_id: the order whose proxies are used; read from `IPROYAL_ORDER_ID` when `None`.
            base_url: API root (a local fake in tests).
            **options: see `ProxyProvider.__init__`.

        Raises:
            ValueError: when the key or the order id is missing (naming the environment variable).
        """
        super().__init__(**options)
        key = api_key or os.environ.get("IPROYAL_API_KEY")
        if not key:
            raise ValueError("IPRoyal needs an API key: pass api_key= or set IPROYAL_API_KEY")
        order = order_id or os.environ.get("IPROYAL_ORDER_ID")
        if not order:
            raise ValueError("IPRoyal needs an order id: pass order_id= or set IPROYAL_ORDER_ID")
        self._api_key = key
        self.order_id = order
        self.base_url = base_url

    def _repr_fields(self) -> dict[str, object]:
        fields: dict[str, object] = {"base_url": redact(self.base_url), "order_id": self.order_id}
        return fields | super()._repr_fields()

    async def _fetch(self, session: aiohttp.ClientSession) -> dict[str, list[str]]:
        return await fetch_iproyal(
            session, api_key=self._api_key, order_id=self.order_id, base_url=self.base_url
        )
