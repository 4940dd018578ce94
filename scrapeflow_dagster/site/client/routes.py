"""Routes that exercise an HTTP client rather than fail it: redirects, big bodies, echo, cookies."""

import contextlib
import json
from typing import Any

from aiohttp import web

_BIG_CHUNK = b"x" * 65_536
_MAX_BIG_BYTES = 1 << 31


async def redirect(request: web.Request) -> web.Response:
    raise web.HTTPFound(f"/page/{request.match_info['n']}")


async def redirect_loop(request: web.Request) -> web.Response:
    raise web.HTTPFound("/redirect-loop")


async def big(request: web.Request) -> web.StreamResponse:
    size = int(request.match_info["nbytes"])
    if size > _MAX_BIG_BYTES:
        raise web.HTTPBadRequest(text=f"at most {_MAX_BIG_BYTES} bytes")
    return await stream_bytes(request, size, "application/octet-stream")


async def stream_bytes(request: web.Request, size: int, content_type: str) -> web.StreamResponse:
    """`size` bytes of `x`, declared and streamed in 64 KiB chunks (never held in memory)."""
    response = web.StreamResponse(headers={"Content-Type": content_type})
    response.content_length = size
    await response.prepare(request)
    for start in range(0, size, len(_BIG_CHUNK)):
        await response.write(_BIG_CHUNK[: size - start])
    await response.write_eof()
    return response


async def echo(request: web.Request) -> web.Response:
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


async def set_cookie(request: web.Request) -> web.Response:
    response = web.json_response({"set": dict(request.query)})
    for name, value in request.query.items():
        response.set_cookie(name, value, path="/")
    return response


async def health(request: web.Request) -> web.Response:
    return web.Response(text="ok")
