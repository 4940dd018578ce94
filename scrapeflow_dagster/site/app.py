"""The local test website: deterministic pages plus fault routes, as a plain aiohttp app.

Every answer is a pure function of the route, the app's `seed` and (for stateful routes) how
many times the route was requested before, so tests can predict it.

Routes:
    `/page/{n}`: HTML of exactly `page_bytes` bytes (when that is more than the head), titled
        `Page n`, linking first to `/page/{n+1}` (so a crawl from page 0 reaches every page),
        then to 9 more pages chosen by `page_links`.
    `/sitemap.txt`: one absolute URL per page.
    `/status/{code}`, `/retry-after/{seconds}` (429), `/slow/{seconds}`, `/captcha` (200 block
        page), `/redirect/{n}`, `/redirect-loop`, `/big/{nbytes}`, `/echo`, `/set-cookie?k=v`,
        `/health`.
    `/reset`: aborts the TCP connection with an RST, the client sees `ClientOSError`.
    `/truncated`: declares a Content-Length and closes halfway: `ClientPayloadError`.
    `/flaky/{name}?fail=K&code=503`: the first K requests for `name` answer `code`, later ones a
        page; `fail=-1` fails forever. `POST /control/flaky/{name}?fail=K` sets the failures left,
        `POST /control/flaky/{name}/reset` forgets the name, `GET /control/flaky/{name}` shows it.
    `/mixed/{n}`: `fault_of(n, seed, rates)` picks a fault (or none) for each n. Faults are
        transient: a faulty n fails on its first request and serves its page afterwards, so
        retries converge; a `reset` fault fails the first two requests, because aiohttp's client
        silently reconnects once on a dropped connection. `?sticky=1` makes the fault permanent.
        `server_error` answers 503, `too_many` 429 with Retry-After, `slow` sleeps
        `slow_seconds` first, `truncated` cuts the page body, `captcha` serves the block page.
    `POST /control/reset`: forgets all flaky and mixed counters.
"""

import asyncio
import contextlib
import json
import random
import socket
import struct
from dataclasses import dataclass
from typing import Any, Self

from aiohttp import web

FAULT_KINDS = ("server_error", "reset", "slow", "truncated", "captcha", "too_many")
SERVER_ERROR_STATUS = 503
RESET_FAULT_REQUESTS = 2
LINKS_PER_PAGE = 10
CAPTCHA_HTML = (
    "<!DOCTYPE html>\n<html><head><title>Attention Required</title></head>\n"
    "<body><h1>Please verify you are a human</h1>\n"
    '<form action="/captcha"><label><input type="checkbox" name="captcha"> '
    "I'm not a robot</label></form>\n</body></html>\n"
)
_MASK64 = (1 << 64) - 1
_BIG_CHUNK = b"x" * 65_536
_MAX_BIG_BYTES = 1 << 31
_PAGE_TAIL = b"</p>\n</body></html>\n"
_WORDS = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor".split()


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


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def _hash(*values: int) -> int:
    h = 0
    for value in values:
        h = _splitmix64(h ^ (value & _MASK64))
    return h


def fault_of(n: int, seed: int, rates: FaultRates) -> str | None:
    """The fault `/mixed/{n}` shows on a site built with `seed` and `rates`.

    Args:
        n: the page number.
        seed: the site's seed.
        rates: the site's fault rates.

    Returns:
        One of `FAULT_KINDS`, or None for a page that serves normally.
    """
    point = _hash(1, seed, n) / 2.0**64
    for kind in FAULT_KINDS:
        point -= getattr(rates, kind)
        if point < 0.0:
            return kind
    return None


def page_links(n: int, *, pages: int, seed: int) -> list[int]:
    """The pages `/page/{n}` links to, in order: `n + 1` first, then pseudo-random others.

    Args:
        n: the page number.
        pages: how many pages the site has.
        seed: the site's seed.

    Returns:
        Up to `LINKS_PER_PAGE` distinct page numbers, none equal to `n`.
    """
    links = [(n + 1) % pages] if pages > 1 else []
    for i in range(4 * LINKS_PER_PAGE):
        if len(links) >= min(LINKS_PER_PAGE, pages - 1):
            break
        m = _hash(2, seed, n, i) % pages
        if m != n and m not in links:
            links.append(m)
    return links


def _filler(size: int, seed: int) -> bytes:
    rng = random.Random(seed)
    words: list[str] = []
    total = 0
    while total < size:
        words.append(rng.choice(_WORDS))
        total += len(words[-1]) + 1
    return " ".join(words).encode()[:size]


def _mixed_fault_requests(fault: str) -> int:
    return RESET_FAULT_REQUESTS if fault == "reset" else 1


def _abort(request: web.BaseRequest) -> web.Response:
    """Drop the connection with an RST; the returned response is never sent."""
    transport = request.transport
    if transport is not None:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
    return web.Response()


def _int_query(request: web.Request, name: str, default: int | None) -> int:
    raw = request.query.get(name)
    if raw is None and default is not None:
        return default
    try:
        return int(raw or "")
    except ValueError:
        raise web.HTTPBadRequest(text=f"query {name!r} must be an integer") from None


class _Site:
    """Route handlers over one site's configuration and request counters."""

    def __init__(self, *, pages: int, page_bytes: int, seed: int, rates: FaultRates) -> None:
        self.pages = pages
        self.page_bytes = page_bytes
        self.seed = seed
        self.rates = rates
        self.filler = _filler(page_bytes, seed)
        self.flaky_left: dict[str, int] = {}
        self.flaky_requests: dict[str, int] = {}
        self.mixed_requests: dict[int, int] = {}

    def page_body(self, n: int) -> bytes:
        links = "".join(
            f'<li><a href="/page/{m}">Page {m}</a></li>'
            for m in page_links(n, pages=self.pages, seed=self.seed)
        )
        head = (
            f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Page {n}</title></head>\n'
            f"<body><h1>Page {n}</h1>\n<ul>{links}</ul>\n<p>"
        ).encode()
        return head + self.filler[: self.page_bytes - len(head) - len(_PAGE_TAIL)] + _PAGE_TAIL

    def page_number(self, request: web.Request) -> int:
        n = int(request.match_info["n"])
        if n >= self.pages:
            raise web.HTTPNotFound(text=f"no page {n}: the site has {self.pages} pages")
        return n

    def page(self, n: int) -> web.Response:
        return web.Response(body=self.page_body(n), content_type="text/html", charset="utf-8")

    async def get_page(self, request: web.Request) -> web.Response:
        return self.page(self.page_number(request))

    async def slow(self, request: web.Request) -> web.Response:
        await asyncio.sleep(float(request.match_info["seconds"]))
        return self.page(0)

    async def sitemap(self, request: web.Request) -> web.Response:
        base = f"{request.scheme}://{request.host}"
        text = "".join(f"{base}/page/{n}\n" for n in range(self.pages))
        return web.Response(text=text, content_type="text/plain")

    async def truncated(
        self, request: web.Request, body: bytes | None = None
    ) -> web.StreamResponse:
        body = body or self.page_body(0)
        response = web.StreamResponse(headers={"Content-Type": "text/html; charset=utf-8"})
        response.content_length = len(body)
        await response.prepare(request)
        await response.write(body[: len(body) // 2])
        if request.transport is not None:
            request.transport.close()
        return response

    async def flaky(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        code = _int_query(request, "code", SERVER_ERROR_STATUS)
        self.flaky_requests[name] = self.flaky_requests.get(name, 0) + 1
        left = self.flaky_left.setdefault(name, _int_query(request, "fail", 1))
        if left == 0:
            return self.page(0)
        if left > 0:
            self.flaky_left[name] = left - 1
        return web.Response(status=code, text=f"flaky {name}: failing with {code}")

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

    async def reset_all(self, request: web.Request) -> web.Response:
        self.flaky_left.clear()
        self.flaky_requests.clear()
        self.mixed_requests.clear()
        return web.Response(text="ok")

    async def mixed(self, request: web.Request) -> web.StreamResponse:
        n = self.page_number(request)
        fault = fault_of(n, self.seed, self.rates)
        if fault is None:
            return self.page(n)
        seen = self.mixed_requests.get(n, 0)
        self.mixed_requests[n] = seen + 1
        if seen >= _mixed_fault_requests(fault) and request.query.get("sticky") != "1":
            return self.page(n)
        if fault == "server_error":
            return web.Response(status=SERVER_ERROR_STATUS, text="server error")
        if fault == "reset":
            return _abort(request)
        if fault == "slow":
            await asyncio.sleep(self.rates.slow_seconds)
            return self.page(n)
        if fault == "truncated":
            return await self.truncated(request, self.page_body(n))
        if fault == "captcha":
            return web.Response(text=CAPTCHA_HTML, content_type="text/html")
        return _too_many(str(self.rates.retry_after_seconds))


def _too_many(seconds: str) -> web.Response:
    return web.Response(status=429, text="too many requests", headers={"Retry-After": seconds})


async def _status(request: web.Request) -> web.Response:
    code = int(request.match_info["code"])
    if not 200 <= code <= 599:
        raise web.HTTPBadRequest(text="status must be in [200, 599]")
    return web.Response(status=code, text=None if code in (204, 304) else f"status {code}")


async def _retry_after(request: web.Request) -> web.Response:
    return _too_many(request.match_info["seconds"])


async def _captcha(request: web.Request) -> web.Response:
    return web.Response(text=CAPTCHA_HTML, content_type="text/html")


async def _reset(request: web.Request) -> web.Response:
    return _abort(request)


async def _redirect(request: web.Request) -> web.Response:
    raise web.HTTPFound(f"/page/{request.match_info['n']}")


async def _redirect_loop(request: web.Request) -> web.Response:
    raise web.HTTPFound("/redirect-loop")


async def _big(request: web.Request) -> web.StreamResponse:
    size = int(request.match_info["nbytes"])
    if size > _MAX_BIG_BYTES:
        raise web.HTTPBadRequest(text=f"at most {_MAX_BIG_BYTES} bytes")
    response = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
    response.content_length = size
    await response.prepare(request)
    for start in range(0, size, len(_BIG_CHUNK)):
        await response.write(_BIG_CHUNK[: size - start])
    await response.write_eof()
    return response


async def _echo(request: web.Request) -> web.Response:
    raw = await request.read()
    body: Any = None
    with contextlib.suppress(ValueError):
        body = json.loads(raw) if raw else None
    wanted = ("User-Agent", "Content-Type", "Accept", "Referer")
    return web.json_response(
        {
            "method": request.method,
            "path": request.path,
            "query": dict(request.query),
            "json": body,
            "body": raw.decode("utf-8", "replace"),
            "cookies": dict(request.cookies),
            "headers": {k: request.headers[k] for k in wanted if k in request.headers},
        }
    )


async def _set_cookie(request: web.Request) -> web.Response:
    response = web.json_response({"set": dict(request.query)})
    for name, value in request.query.items():
        response.set_cookie(name, value, path="/")
    return response


async def _health(request: web.Request) -> web.Response:
    return web.Response(text="ok")


def build_site(
    *,
    pages: int = 1000,
    page_bytes: int = 20_000,
    seed: int = 0,
    fault_rates: FaultRates | None = None,
) -> web.Application:
    """Build the local test website; see the module docstring for its routes.

    Args:
        pages: how many `/page/{n}` (and `/mixed/{n}`) pages exist.
        page_bytes: the size of each page body in bytes (pages never get smaller than their head).
        seed: picks the links between pages, the filler text and which mixed pages are faulty.
        fault_rates: the fault mix of `/mixed/{n}`; None means `FaultRates()`.

    Returns:
        An aiohttp application, not yet running.

    Raises:
        ValueError: when `pages` is not positive or `page_bytes` is negative.
    """
    if pages < 1 or page_bytes < 0:
        raise ValueError(f"need pages >= 1 and page_bytes >= 0, got {pages} and {page_bytes}")
    site = _Site(pages=pages, page_bytes=page_bytes, seed=seed, rates=fault_rates or FaultRates())
    app = web.Application()
    app.add_routes(
        [
            web.get(r"/page/{n:\d+}", site.get_page),
            web.get("/sitemap.txt", site.sitemap),
            web.get(r"/status/{code:\d{3}}", _status),
            web.get(r"/retry-after/{seconds:\d+}", _retry_after),
            web.get("/flaky/{name}", site.flaky),
            web.get("/control/flaky/{name}", site.flaky_control),
            web.post("/control/flaky/{name}", site.flaky_control),
            web.post("/control/flaky/{name}/reset", site.flaky_reset),
            web.post("/control/reset", site.reset_all),
            web.get(r"/slow/{seconds:\d+(\.\d+)?}", site.slow),
            web.get("/reset", _reset),
            web.get("/truncated", site.truncated),
            web.get("/captcha", _captcha),
            web.get(r"/redirect/{n:\d+}", _redirect),
            web.get("/redirect-loop", _redirect_loop),
            web.get(r"/big/{nbytes:\d+}", _big),
            web.route("*", "/echo", _echo),
            web.get("/set-cookie", _set_cookie),
            web.get(r"/mixed/{n:\d+}", site.mixed),
            web.get("/health", _health),
        ]
    )
    return app
