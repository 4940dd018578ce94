"""`/mixed/{n}`: the site's pages with a seeded share of faults, transient unless sticky."""

import asyncio
from dataclasses import dataclass
from typing import Self

from aiohttp import web

from scrapeflow_dagster.site.content.pages import Pages, seeded_hash
from scrapeflow_dagster.site.faults.stateless import (
    SERVER_ERROR_STATUS,
    abort,
    captcha_page,
    too_many,
    truncate,
)

FAULT_KINDS = ("server_error", "reset", "slow", "truncated", "captcha", "too_many")
# aiohttp's client silently reconnects once on a dropped connection, so one reset is never seen.
RESET_FAULT_REQUESTS = 2


@dataclass(frozen=True)
class FaultRates:
    """Share of `/mixed/{n}` pages that get each fault; the rest serve normally.

    Raises:
        ValueError: when a rate is outside [0, 1] or the rates add up to more than 1.
    """

    server_error: float = 0.10
    reset: float = 0.05
    slow: float = 0.05
    truncated: float = 0.02
    captcha: float = 0.02
    too_many: float = 0.02
    slow_seconds: float = 5.0
    retry_after_seconds: int = 1

    def __post_init__(self) -> None:
        rates = [getattr(self, kind) for kind in FAULT_KINDS]
        if any(not 0.0 <= rate <= 1.0 for rate in rates) or sum(rates) > 1.0 + 1e-9:
            raise ValueError(f"fault rates must be in [0, 1] and sum to at most 1: {self}")

    @classmethod
    def none(cls) -> Self:
        """Rates with no faults at all."""
        return cls(server_error=0.0, reset=0.0, slow=0.0, truncated=0.0, captcha=0.0, too_many=0.0)


def fault_of(n: int, seed: int, rates: FaultRates) -> str | None:
    """The fault `/mixed/{n}` shows on a site built with `seed` and `rates`.

    Args:
        n: the page number.
        seed: the site's seed.
        rates: the site's fault rates.

    Returns:
        One of `FAULT_KINDS`, or None for a page that serves normally.
    """
    point = seeded_hash(1, seed, n) / 2.0**64
    for kind in FAULT_KINDS:
        point -= getattr(rates, kind)
        if point < 0.0:
            return kind
    return None


def _fault_requests(fault: str) -> int:
    return RESET_FAULT_REQUESTS if fault == "reset" else 1


class MixedFaults:
    """The `/mixed/{n}` route and how many times each faulty page was requested."""

    def __init__(self, pages: Pages, rates: FaultRates) -> None:
        self.pages = pages
        self.rates = rates
        self.requests: dict[int, int] = {}

    def forget(self) -> None:
        """Forget every request count, so faulty pages fail again."""
        self.requests.clear()

    async def mixed(self, request: web.Request) -> web.StreamResponse:
        n = self.pages.number(request)
        fault = fault_of(n, self.pages.seed, self.rates)
        if fault is None:
            return self.pages.response(n)
        seen = self.requests.get(n, 0)
        self.requests[n] = seen + 1
        if seen >= _fault_requests(fault) and request.query.get("sticky") != "1":
            return self.pages.response(n)
        if fault == "server_error":
            return web.Response(status=SERVER_ERROR_STATUS, text="server error")
        if fault == "reset":
            return abort(request)
        if fault == "slow":
            await asyncio.sleep(self.rates.slow_seconds)
            return self.pages.response(n)
        if fault == "truncated":
            return await truncate(request, self.pages.body(n))
        if fault == "captcha":
            return captcha_page()
        return too_many(str(self.rates.retry_after_seconds))
