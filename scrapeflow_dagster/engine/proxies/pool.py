"""A pool of proxies by country: health scores, benching, half-open re-admission, rotation.

A failure raises a proxy's error score by the weight of its kind; at the threshold the proxy is
benched for `cooldown_seconds`, then comes back half-open, one failure away from the bench again.
A success halves the score. Every piece of state is per instance (scrapeflow kept it on the class,
shared by all providers), and nothing logged or reported here holds a credential.
"""

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypedDict

from scrapeflow_dagster.engine.errors import ErrorKind
from scrapeflow_dagster.engine.redact import proxy_host
from scrapeflow_dagster.engine.settings import (
    DEFAULT_PROXY_COOLDOWN_SECONDS,
    DEFAULT_PROXY_ERROR_THRESHOLD,
)

logger = logging.getLogger(__name__)

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


class ProxyPoolOptions(TypedDict, total=False):
    """Keyword options of `ProxyPool.__init__`, which every provider passes on."""

    error_threshold: float
    cooldown_seconds: float
    clock: Callable[[], float]


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


class ProxyPool:
    """Proxies by country with health scores; `ProxyProvider` adds where they come from.

    `proxies` and `bad_proxies` are documented on `ProxyProvider`, the class callers use.
    """

    def __init__(
        self,
        *,
        error_threshold: float = DEFAULT_PROXY_ERROR_THRESHOLD,
        cooldown_seconds: float = DEFAULT_PROXY_COOLDOWN_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Create an empty pool.

        Args:
            error_threshold: error score at which a proxy is benched.
            cooldown_seconds: how long a benched proxy stays out before it is re-admitted.
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
        self._clock = clock
        self._states: dict[str, _ProxyState] = {}
        self._cursors: dict[str, int] = {}

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

    def _apply_check(self, candidates: list[str], alive: set[str]) -> None:
        """Record a health check: `alive` leave the bench clean, the other candidates join it."""
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
