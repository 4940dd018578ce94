"""What the site saw: every request counted by path, by status, by Host header and path, and
in flight per Host header.

A middleware counts every request except `/control/...` ones, so a test can assert from the
server side what a crawler fetched (never a disallowed path, robots.txt once), under which name
it asked (`127.0.0.1:PORT` and `localhost:PORT` are two hosts to a crawler, one server here: a
test shows that nothing reached one of them) and how many of its requests overlapped per host.
"""

import asyncio
from collections import Counter, defaultdict

from aiohttp import web
from aiohttp.typedefs import Handler

CONTROL_PREFIX = "/control/"


class Traffic:
    """Request counts of one app; `middleware` counts, `control` and `reset` show and zero them."""

    def __init__(self) -> None:
        self.paths: Counter[str] = Counter()
        # (Host header, path): which name each path was asked under.
        self.host_paths: Counter[tuple[str, str]] = Counter()
        self.statuses: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self.in_flight: Counter[str] = Counter()
        self.max_in_flight: Counter[str] = Counter()
        # (Host header, client address): what each machine of a crawler held at one host.
        self.client_in_flight: Counter[tuple[str, str]] = Counter()
        self.max_client_in_flight: Counter[tuple[str, str]] = Counter()

    def forget(self) -> None:
        """Zero the counts; requests still in flight stay counted in `in_flight` (a live gauge)
        and so start the new `max_in_flight`."""
        self.paths.clear()
        self.host_paths.clear()
        self.statuses.clear()
        self.max_in_flight = Counter({h: n for h, n in self.in_flight.items() if n > 0})
        self.max_client_in_flight = Counter(
            {pair: n for pair, n in self.client_in_flight.items() if n > 0}
        )

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Count the request by path, by Host header and path, by Host header while in flight,
        and by answer status."""
        path = request.path
        if path.startswith(CONTROL_PREFIX):
            return await handler(request)
        host = request.headers.get("Host", "")
        pair = (host, request.remote or "")
        self.paths[path] += 1
        self.host_paths[host, path] += 1
        self.in_flight[host] += 1
        self.max_in_flight[host] = max(self.max_in_flight[host], self.in_flight[host])
        self.client_in_flight[pair] += 1
        self.max_client_in_flight[pair] = max(
            self.max_client_in_flight[pair], self.client_in_flight[pair]
        )
        status = "500"  # an unexpected exception becomes a 500
        try:
            response = await handler(request)
            status = str(response.status)
            return response
        except web.HTTPException as error:
            status = str(error.status)
            raise
        except asyncio.CancelledError:
            status = "cancelled"  # the client went away before the answer
            raise
        finally:
            self.in_flight[host] -= 1
            self.client_in_flight[pair] -= 1
            self.statuses[path][status] += 1

    async def control(self, request: web.Request) -> web.Response:
        """`{"paths", "hosts", "statuses", "max_in_flight", "max_in_flight_by_client",
        "in_flight"}` as JSON (`hosts`: Host header -> path -> requests;
        `max_in_flight_by_client`: Host header -> client address -> peak)."""
        by_client: dict[str, dict[str, int]] = {}
        for (host, client), most in self.max_client_in_flight.items():
            by_client.setdefault(host, {})[client] = most
        by_host: dict[str, dict[str, int]] = {}
        for (host, path), n in self.host_paths.items():
            by_host.setdefault(host, {})[path] = n
        return web.json_response(
            {
                "paths": dict(self.paths),
                "hosts": by_host,
                "statuses": {path: dict(counts) for path, counts in self.statuses.items()},
                "max_in_flight": dict(self.max_in_flight),
                "max_in_flight_by_client": by_client,
                "in_flight": dict(self.in_flight),
            }
        )

    async def reset(self, request: web.Request) -> web.Response:
        """Zero the counts (see `forget`)."""
        self.forget()
        return web.Response(text="ok")
