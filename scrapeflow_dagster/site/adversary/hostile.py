"""`/hostile/`: a site that tries to misuse a crawler. Its index links to each case:

    /hostile/r/private     302 to /graph/private/secret.html (robots.txt disallows /graph/private/)
    /hostile/r/offsite     302 to this server under its other name (127.0.0.1 <-> localhost):
                           another host, out of a host-scoped crawl
    /hostile/r/file        302 to file:///etc/passwd
    /hostile/r/loop        302 to itself
    /hostile/r/chain/5     five 302 hops, then /hostile/landed (a page)
    /hostile/r/internal    302 to the site's `internal_url` (default: its own /hostile/landed),
                           an address a public page must not lead to
    /hostile/r/to?url=U    302 to U (not linked: for tests that pick the target)
    /hostile/huge          300 MiB of body, streamed
    /hostile/bomb          1 KiB on the wire that gzip-inflates to 256 MiB
    /hostile/deep/a/...    an endless path: each page links one level deeper
    /hostile/trickle       a 200 whose body comes a byte every 0.2 s for a minute (not linked:
                           a crawl would wait out its request timeout and retries)

`/hostile/landed` names the Host it was asked under; `GET /control/requests` counts what each
path got.
"""

import asyncio
import functools
import zlib

from aiohttp import web

from scrapeflow_dagster.site.client.routes import stream_bytes

INDEX_PATH = "/hostile/"
HUGE_BYTES = 300 * 1024 * 1024
BOMB_BYTES = 256 * 1024 * 1024
CHAIN_HOPS = 5
# The cases the index links, in order.
CASES = (
    "/hostile/r/private",
    "/hostile/r/offsite",
    "/hostile/r/file",
    "/hostile/r/loop",
    f"/hostile/r/chain/{CHAIN_HOPS}",
    "/hostile/r/internal",
    "/hostile/huge",
    "/hostile/bomb",
    "/hostile/deep/a",
)


@functools.cache
def _bomb() -> bytes:
    """`BOMB_BYTES` zeros, gzip-compressed once (~250 KiB)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1 << 20)
    parts = [packer.compress(zeros) for _ in range(BOMB_BYTES >> 20)]
    return b"".join(parts) + packer.flush()


class Hostile:
    """The hostile routes of one site; `internal_url` is where `/hostile/r/internal` sends."""

    def __init__(self, internal_url: str | None = None) -> None:
        self.internal_url = internal_url

    async def index(self, request: web.Request) -> web.Response:
        """Links to every case."""
        links = "".join(f'<li><a href="{path}">{path}</a></li>\n' for path in CASES)
        return web.Response(
            text=f"<!DOCTYPE html>\n<html><head><title>Hostile</title></head>\n"
            f"<body><ul>\n{links}</ul></body></html>\n",
            content_type="text/html",
        )

    async def redirect(self, request: web.Request) -> web.Response:
        """The `/hostile/r/...` redirects (see the module)."""
        case = request.match_info["case"]
        host, _, port = request.host.partition(":")
        other = "localhost" if host == "127.0.0.1" else "127.0.0.1"
        targets = {
            "private": "/graph/private/secret.html",
            "offsite": f"http://{other}:{port}/hostile/landed",
            "file": "file:///etc/passwd",
            "loop": "/hostile/r/loop",
            "internal": self.internal_url or "/hostile/landed",
        }
        if case == "to" and "url" in request.query:
            raise web.HTTPFound(request.query["url"])
        if case.startswith("chain/"):
            left = int(case.removeprefix("chain/"))
            raise web.HTTPFound(f"/hostile/r/chain/{left - 1}" if left > 0 else "/hostile/landed")
        if case not in targets:
            raise web.HTTPNotFound()
        raise web.HTTPFound(targets[case])

    async def landed(self, request: web.Request) -> web.Response:
        """Where the chain (and the offsite redirect) ends: a page naming its Host."""
        return web.Response(
            text=f"<!DOCTYPE html>\n<html><head><title>Landed on {request.host}</title></head>"
            "<body><p>landed</p></body></html>\n",
            content_type="text/html",
        )

    async def huge(self, request: web.Request) -> web.StreamResponse:
        """`HUGE_BYTES` of body, declared and streamed."""
        return await stream_bytes(request, HUGE_BYTES, "text/html")

    async def bomb(self, request: web.Request) -> web.Response:
        """A gzip body (`Content-Encoding: gzip`) that inflates to `BOMB_BYTES`."""
        return web.Response(
            body=_bomb(),
            headers={"Content-Type": "text/html", "Content-Encoding": "gzip"},
        )

    async def trickle(self, request: web.Request) -> web.StreamResponse:
        """A body a byte at a time, 0.2 s apart, for 60 s."""
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        response.content_length = 300
        await response.prepare(request)
        for _ in range(300):
            await response.write(b"x")
            await asyncio.sleep(0.2)
        await response.write_eof()
        return response

    async def deep(self, request: web.Request) -> web.Response:
        """An endless path: `/hostile/deep/a/a` links `/hostile/deep/a/a/a`."""
        return web.Response(
            text=f'<!DOCTYPE html>\n<html><head><title>Deep</title></head><body><a href="'
            f'{request.path}/a">deeper</a></body></html>\n',
            content_type="text/html",
        )

    def routes(self) -> list[web.RouteDef]:
        """The routes to add to the site."""
        return [
            web.get(INDEX_PATH, self.index),
            web.get("/hostile/r/{case:.+}", self.redirect),
            web.get("/hostile/landed", self.landed),
            web.get("/hostile/huge", self.huge),
            web.get("/hostile/bomb", self.bomb),
            web.get("/hostile/deep/{rest:.+}", self.deep),
            web.get("/hostile/trickle", self.trickle),
        ]
