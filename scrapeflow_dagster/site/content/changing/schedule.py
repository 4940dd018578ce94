"""When each changing page changes: a Poisson process per page on the site clock, its change
times drawn from a seeded generator as far as asked and kept, and site seconds as wall time."""

import bisect
import math
import random
import threading
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

# Changes per hour by n % 10: hourly, daily three times, weekly three times, never three times.
DEFAULT_CHANGING_RATES: tuple[float, ...] = (
    1.0,
    1 / 24,
    1 / 24,
    1 / 24,
    1 / 168,
    1 / 168,
    1 / 168,
    0.0,
    0.0,
    0.0,
)
# How far the site clock may go: ten years of site time. Change times are drawn up to the clock
# and kept, so an absurd `t` would otherwise hold the server drawing for ever.
MAX_SITE_SECONDS = 10 * 365 * 86_400.0
# Site second 0 as a wall time: what Last-Modified and the sitemap's lastmod count from.
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def rate_per_hour(n: int, rates: Sequence[float] | None = None) -> float:
    """How many times per hour page n changes on average.

    Args:
        n: the page number.
        rates: changes per hour, cycled over the pages (page n gets `rates[n % len(rates)]`);
            None means `DEFAULT_CHANGING_RATES`.

    Returns:
        The rate, 0.0 for a page that never changes.
    """
    cycle = DEFAULT_CHANGING_RATES if rates is None else rates
    return float(cycle[n % len(cycle)])


def changefreq(rate: float) -> str:
    """The sitemap `<changefreq>` of a page changing `rate` times per hour."""
    if rate >= 1.0:
        return "hourly"
    if rate >= 1 / 24:
        return "daily"
    if rate >= 1 / 168:
        return "weekly"
    return "monthly" if rate > 0 else "never"


class _Schedule:
    """One page's change times, drawn as far as asked and kept (the draws are sequential)."""

    def __init__(self, seed: int, n: int, rate: float) -> None:
        self.rng = random.Random(f"{seed}:changing:{n}")
        self.per_second = rate / 3600
        self.times: list[float] = []
        self.drawn_until = 0.0  # every change time <= this is in `times`

    def extend(self, until: float) -> None:
        if self.per_second <= 0:
            return
        while self.drawn_until < until:
            last = self.times[-1] if self.times else 0.0
            following = last + self.rng.expovariate(self.per_second)
            self.times.append(following)
            self.drawn_until = following

    def count(self, until: float) -> int:
        self.extend(until)
        return bisect.bisect_right(self.times, until)


# Schedules by (seed, n, rate), shared by every app and test of this process: they are pure
# functions of the key. The lock is there because `SiteThread` serves from another thread.
_SCHEDULES: dict[tuple[int, int, float], _Schedule] = {}
_LOCK = threading.Lock()


def _check_time(t: float, name: str) -> None:
    if not math.isfinite(t):
        raise ValueError(f"{name} must be a finite number of site seconds, got {t}")


def _schedule(n: int, seed: int, rate: float) -> _Schedule:
    key = (seed, n, rate)
    found = _SCHEDULES.get(key)
    if found is None:
        found = _SCHEDULES[key] = _Schedule(seed, n, rate)
    return found


def change_times(
    n: int, until: float, *, seed: int = 0, rates: Sequence[float] | None = None
) -> list[float]:
    """The times (site seconds) at which page n changes, up to `until` included.

    Args:
        n: the page number.
        until: the last time of interest, in site seconds.
        seed: the site's seed.
        rates: the site's `changing_rates` (None: `DEFAULT_CHANGING_RATES`).

    Returns:
        The change times, increasing, all in (0, until]; [] for a page that never changes.

    Raises:
        ValueError: when `until` is not finite.
    """
    _check_time(until, "until")
    with _LOCK:
        schedule = _schedule(n, seed, rate_per_hour(n, rates))
        return schedule.times[: schedule.count(until)]


def version_at(n: int, t: float, *, seed: int = 0, rates: Sequence[float] | None = None) -> int:
    """Page n's version at site time t: how many times it changed at or before t (0 at first).

    Args and Raises: as `change_times`, with t as `until`.
    """
    _check_time(t, "t")
    with _LOCK:
        return _schedule(n, seed, rate_per_hour(n, rates)).count(t)


def last_change(n: int, t: float, *, seed: int = 0, rates: Sequence[float] | None = None) -> float:
    """The time of page n's last change at or before t; 0.0 while it is at version 0."""
    _check_time(t, "t")
    with _LOCK:
        schedule = _schedule(n, seed, rate_per_hour(n, rates))
        count = schedule.count(t)
        return schedule.times[count - 1] if count else 0.0


def site_time(t: float) -> datetime:
    """Site second t as a wall time, to the second (as HTTP dates and lastmod carry it)."""
    return (EPOCH + timedelta(seconds=t)).replace(microsecond=0)
