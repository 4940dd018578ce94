"""Cho and Garcia-Molina's steady-state freshness, and the allocation of a fetch budget that
maximises it over a mix of change rates (computed, not simulated)."""

import math
from collections.abc import Sequence
from typing import Any

from bench.refresh.model import CLASSES
from scrapeflow_dagster.site.content.changing import changefreq


def steady_freshness(rate: float, fetches: float) -> float:
    """Cho and Garcia-Molina's time-averaged freshness F(l, f) = (f / l)(1 - e^(-l / f)) of a
    page changing `rate` times and fetched `fetches` times per unit time at even intervals (1
    for a page that never changes, 0 for one that changes and is never fetched)."""
    if rate <= 0:
        return 1.0
    if fetches <= 0:
        return 0.0
    x = rate / fetches
    return -math.expm1(-x) / x


def _x_for_marginal(target: float) -> float:
    """The x = l / f at which l dF/df = 1 - (1 + x) e^(-x) equals `target` in (0, 1): it rises
    from 0 to 1 with x, so bisection."""
    lo, hi = 0.0, 1.0
    while -math.expm1(-hi) - hi * math.exp(-hi) < target:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if -math.expm1(-mid) - mid * math.exp(-mid) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def optimum(rates: Sequence[float], budget: float) -> dict[str, Any]:
    """The steady-state allocation of `budget` fetches per hour over pages changing `rates`
    times per hour that maximises their mean freshness (Cho and Garcia-Molina), analytically:
    the marginal dF/df = (1 - (1 + x) e^(-x)) / l, x = l / f, is equal (the Lagrange multiplier
    mu) across the pages fetched at all, and a page with 1 / l <= mu (changing too fast to be
    worth it) or that never changes gets none; mu by bisection so that the f sum to `budget`.
    Also the uniform allocation's (f = budget / N for every page)."""
    pages = len(rates)
    changing = sorted({r for r in rates if r > 0})
    count = {r: sum(1 for x in rates if x == r) for r in changing}

    def allocation(mu: float) -> dict[float, float]:
        return {r: (0.0 if mu * r >= 1 else r / _x_for_marginal(mu * r)) for r in changing}

    def spent(mu: float) -> float:
        return sum(count[r] * f for r, f in allocation(mu).items())

    fetches: dict[float, float] = {}
    if changing:
        lo, hi = 1e-9 / changing[-1], 1 / changing[0]  # spent(lo) huge, spent(hi) = 0
        while spent(lo) < budget:
            lo /= 1e3
        for _ in range(200):  # on a log scale: mu spans orders of magnitude
            mid = math.sqrt(lo * hi)
            if spent(mid) > budget:
                lo = mid
            else:
                hi = mid
        fetches = allocation(math.sqrt(lo * hi))
    best = sum(steady_freshness(r, fetches.get(r, 0.0)) for r in rates) / pages
    uniform = sum(steady_freshness(r, budget / pages) for r in rates) / pages
    per_day: dict[str, float] = {}
    for cls in CLASSES:
        members = [r for r in rates if changefreq(r) == cls]
        if members:
            per_day[cls] = sum(fetches.get(r, 0.0) for r in members) / len(members) * 24
    return {
        "freshness": best,
        "uniform_freshness": uniform,
        "ratio": best / uniform if uniform else None,
        "fetches_per_day": per_day,
    }
