"""Fixtures of the proxy tests: the fake proxy services and a local target site."""

from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from scrapeflow_dagster_tests.fakes.proxy_services import FakeProxyServices


@pytest.fixture
async def services() -> AsyncIterator[FakeProxyServices]:
    """Local fakes of the Webshare, IPRoyal and Proxyscrape APIs."""
    async with FakeProxyServices() as fake:
        yield fake


@pytest.fixture
async def target() -> AsyncIterator[str]:
    """A local site: `/generate_204` like gstatic's, `/echo` returns the request body."""

    async def generate_204(request: web.Request) -> web.Response:
        return web.Response(status=204)

    async def echo(request: web.Request) -> web.Response:
        body = await request.read()
        return web.Response(body=body, headers={"X-Method": request.method})

    app = web.Application()
    app.router.add_get("/generate_204", generate_204)
    app.router.add_route("*", "/echo", echo)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()
