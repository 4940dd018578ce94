"""Fault responses that keep no state: error statuses, 429, captcha, dropped and cut connections.

`mixed` and `named` build their stateful routes from the same responses.
"""

import asyncio
import socket
import struct

from aiohttp import web

from scrapeflow_dagster.site.content.pages import Pages

SERVER_ERROR_STATUS = 503
CAPTCHA_HTML = (
    "<!DOCTYPE html>\n<html><head><title>Attention Required</title></head>\n"
    "<body><h1>Please verify you are a human</h1>\n"
    '<form action="/captcha"><label><input type="checkbox" name="captcha"> '
    "I'm not a robot</label></form>\n</body></html>\n"
)


def abort(request: web.BaseRequest) -> web.Response:
    """Drop the connection with an RST; the returned response is never sent."""
    transport = request.transport
    if transport is not None:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
    return web.Response()


def too_many(retry_after: str) -> web.Response:
    """A 429 asking the client to wait `retry_after` seconds."""
    return web.Response(status=429, text="too many requests", headers={"Retry-After": retry_after})


def captcha_page() -> web.Response:
    """The 200 block page a bot check would serve."""
    return web.Response(text=CAPTCHA_HTML, content_type="text/html")


async def truncate(request: web.Request, body: bytes) -> web.StreamResponse:
    """Declare `body`'s full Content-Length, send its first half and close the connection."""
    response = web.StreamResponse(headers={"Content-Type": "text/html; charset=utf-8"})
    response.content_length = len(body)
    await response.prepare(request)
    await response.write(body[: len(body) // 2])
    if request.transport is not None:
        request.transport.close()
    return response


async def status(request: web.Request) -> web.Response:
    code = int(request.match_info["code"])
    if not 200 <= code <= 599:
        raise web.HTTPBadRequest(text="status must be in [200, 599]")
    return web.Response(status=code, text=None if code in (204, 304) else f"status {code}")


async def retry_after(request: web.Request) -> web.Response:
    return too_many(request.match_info["seconds"])


async def captcha(request: web.Request) -> web.Response:
    return captcha_page()


async def reset(request: web.Request) -> web.Response:
    return abort(request)


class PageFaults:
    """Faults that serve page 0 of the site: late (`/slow`) or cut short (`/truncated`)."""

    def __init__(self, pages: Pages) -> None:
        self.pages = pages

    async def slow(self, request: web.Request) -> web.Response:
        await asyncio.sleep(float(request.match_info["seconds"]))
        return self.pages.response(0)

    async def truncated(self, request: web.Request) -> web.StreamResponse:
        return await truncate(request, self.pages.body(0))
