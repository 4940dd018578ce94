"""A real, minimal forward HTTP proxy on 127.0.0.1, and ways for a proxy to be dead.

`ForwardProxy(mode="forward")` takes absolute-form requests (`GET http://host/path HTTP/1.1`) for
`http://` targets and forwards them with an aiohttp client; it can demand Basic
`Proxy-Authorization` (407 otherwise). `mode="close"` accepts connections and closes them at once;
`mode="hang"` accepts and never answers. `closed_port_url()` gives a port nobody listens on.
"""

import asyncio
from collections.abc import Mapping
from types import TracebackType
from typing import Literal, Self

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from scrapeflow_dagster_tests.support.ports import free_port

ProxyMode = Literal["forward", "close", "hang"]

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)


def _end_to_end(headers: Mapping[str, str]) -> CIMultiDict[str]:
    kept: CIMultiDict[str] = CIMultiDict()
    for name, value in headers.items():
        if name.lower() not in _HOP_BY_HOP:
            kept.add(name, value)
    return kept


def closed_port_url() -> str:
    """`http://127.0.0.1:<port>` for a port that was free a moment ago (connections refused)."""
    return f"http://127.0.0.1:{free_port()}"


class ForwardProxy:
    """A forward HTTP proxy for tests; `forwarded` lists the target URLs it fetched."""

    def __init__(
        self,
        *,
        mode: ProxyMode = "forward",
        username: str | None = None,
        password: str | None = None,
    ) -> None:
        self.mode = mode
        self.username = username
        self.password = password
        self.forwarded: list[str] = []
        self.connections = 0
        self.port = 0
        self._expected_auth = (
            aiohttp.BasicAuth(username, password or "").encode() if username is not None else None
        )
        self._runner: web.AppRunner | None = None
        self._server: asyncio.Server | None = None
        self._session: aiohttp.ClientSession | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        """The proxy URL, with the credentials when the proxy requires them."""
        if self.username is None:
            return f"http://127.0.0.1:{self.port}"
        return f"http://{self.username}:{self.password or ''}@127.0.0.1:{self.port}"

    async def start(self) -> str:
        """Listen on a free port of 127.0.0.1 and return `url`."""
        if self.mode == "forward":
            self._session = aiohttp.ClientSession(auto_decompress=False)
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", self._forward)
            self._runner = web.AppRunner(app)
            await self._runner.setup()
            await web.TCPSite(self._runner, "127.0.0.1", 0).start()
            self.port = self._runner.addresses[0][1]
        else:
            self._server = await asyncio.start_server(self._misbehave, "127.0.0.1", 0)
            self.port = self._server.sockets[0].getsockname()[1]
        return self.url

    async def close(self) -> None:
        """Stop listening and drop every open connection."""
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()
        for writer in list(self._writers):
            writer.close()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _misbehave(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        if self.mode == "close":
            writer.close()
            return
        self._writers.add(writer)
        try:
            while await reader.read(65536):
                pass  # "hang": read whatever comes and never answer
        except ConnectionError:
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        self.connections += 1
        if self._expected_auth is not None:
            if request.headers.get("Proxy-Authorization") != self._expected_auth:
                return web.Response(
                    status=407, headers={"Proxy-Authenticate": 'Basic realm="fake-proxy"'}
                )
        if request.method == "CONNECT":
            return web.Response(status=501, text="CONNECT is not supported")
        if not request.message.url.absolute or request.url.scheme != "http":
            return web.Response(status=400, text="absolute-form http:// request expected")
        assert self._session is not None
        self.forwarded.append(str(request.url))
        body = await request.read()
        try:
            async with self._session.request(
                request.method,
                request.url,
                headers=_end_to_end(request.headers),
                data=body or None,
                allow_redirects=False,
            ) as upstream:
                payload = await upstream.read()
                return web.Response(
                    status=upstream.status, body=payload, headers=_end_to_end(upstream.headers)
                )
        except (aiohttp.ClientError, TimeoutError) as exc:
            return web.Response(status=502, text=f"upstream failed: {type(exc).__name__}")
