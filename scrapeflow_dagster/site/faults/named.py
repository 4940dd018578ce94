"""Faults keyed by a name in the URL, each name with its own state until reset.

`/flaky/{name}` fails for a number of requests, `/timed/{name}` for a number of seconds after its
first request; both serve page 0 once they stop failing.
"""

import math
import time
from dataclasses import dataclass

from aiohttp import web

from scrapeflow_dagster.site.content.pages import Pages
from scrapeflow_dagster.site.faults.stateless import SERVER_ERROR_STATUS


def _int_query(request: web.Request, name: str, default: int | None) -> int:
    raw = request.query.get(name)
    if raw is None and default is not None:
        return default
    try:
        return int(raw or "")
    except ValueError:
        raise web.HTTPBadRequest(text=f"query {name!r} must be an integer") from None


def _seconds_query(request: web.Request, name: str) -> float:
    try:
        seconds = float(request.query.get(name, ""))
    except ValueError:
        seconds = math.nan
    if not 0.0 <= seconds < math.inf:
        raise web.HTTPBadRequest(text=f"query {name!r} must be a number of seconds >= 0")
    return seconds


def _failing(name: str, route: str, code: int) -> web.Response:
    return web.Response(status=code, text=f"{route} {name}: failing with {code}")


@dataclass
class _TimedFault:
    """One `/timed/{name}`: when its first request came and how long it fails from then."""

    started: float  # time.monotonic() at the first request: wall-clock jumps must not end a window
    fail_seconds: float
    requests: int = 0

    def seconds_since_first(self) -> float:
        return time.monotonic() - self.started

    def failing(self) -> bool:
        return self.seconds_since_first() < self.fail_seconds

    def state(self) -> dict[str, float | int | bool]:
        """What `GET /control/timed/{name}` shows, from one reading of the clock."""
        elapsed = self.seconds_since_first()
        return {
            "requests": self.requests,
            "seconds_since_first": elapsed,
            "fail_seconds": self.fail_seconds,
            "failing": elapsed < self.fail_seconds,
        }


_UNSEEN_TIMED = {"requests": 0, "seconds_since_first": None, "fail_seconds": None, "failing": None}


class NamedFaults:
    """The `/flaky/{name}` and `/timed/{name}` routes, their control routes and their state."""

    def __init__(self, pages: Pages) -> None:
        self.pages = pages
        self.flaky_left: dict[str, int] = {}
        self.flaky_requests: dict[str, int] = {}
        self.timed: dict[str, _TimedFault] = {}

    def forget(self) -> None:
        """Forget every name, so each fails again from its next request."""
        self.flaky_left.clear()
        self.flaky_requests.clear()
        self.timed.clear()

    async def flaky(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        code = _int_query(request, "code", SERVER_ERROR_STATUS)
        self.flaky_requests[name] = self.flaky_requests.get(name, 0) + 1
        left = self.flaky_left.setdefault(name, _int_query(request, "fail", 1))
        if left == 0:
            return self.pages.response(0)
        if left > 0:
            self.flaky_left[name] = left - 1
        return _failing(name, "flaky", code)

    def flaky_state(self, name: str) -> web.Response:
        requests = self.flaky_requests.get(name, 0)
        left = self.flaky_left.get(name)
        return web.json_response({"name": name, "fail_left": left, "requests": requests})

    async def flaky_control(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if request.method == "POST":
            self.flaky_left[name] = _int_query(request, "fail", None)
        return self.flaky_state(name)

    async def flaky_reset(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        self.flaky_left.pop(name, None)
        self.flaky_requests.pop(name, None)
        return self.flaky_state(name)

    async def timed_fault(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        code = _int_query(request, "code", SERVER_ERROR_STATUS)
        fail_seconds = _seconds_query(request, "fail_seconds")
        fault = self.timed.get(name)
        if fault is None:
            fault = self.timed[name] = _TimedFault(time.monotonic(), fail_seconds)
        fault.requests += 1
        if fault.failing():
            return _failing(name, "timed", code)
        return self.pages.response(0)

    async def timed_control(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        fault = self.timed.get(name)
        return web.json_response({"name": name, **(fault.state() if fault else _UNSEEN_TIMED)})
