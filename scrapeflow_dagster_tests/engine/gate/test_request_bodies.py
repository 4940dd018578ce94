"""A request's body and method through the gate's hops: a redirect never carries the body to
another origin, PUT and PATCH send their JSON, a HEAD's answer is not held to the body cap."""

import dataclasses
from collections import Counter
from pathlib import Path

import pytest
from aiohttp import web

from scrapeflow_dagster.engine.errors import RedirectRefusedError
from scrapeflow_dagster.engine.gate.fetch import fetch
from scrapeflow_dagster.engine.gate.opening import open_gate
from scrapeflow_dagster_tests.conftest import fast_settings
from scrapeflow_dagster_tests.engine.gate.sites import Site, text

SECRET = {"password": "hunter2"}


def _redirect(location: str, status: int):  # type: ignore[no-untyped-def]
    return lambda site, request: web.Response(status=status, headers={"Location": location})


def _echo(seen: list[tuple[str, bytes]]):  # type: ignore[no-untyped-def]
    async def answer(request: web.Request) -> web.Response:
        seen.append((request.method, await request.read()))
        return web.Response(text="ok")

    return answer


# What keeps the body on a redirect: a 307/308 whatever the method, a 301/302 of any method but
# POST (browsers send a PUT on with its body; a rendered page's script may send one).
@pytest.mark.parametrize(
    ("status", "method"), [(307, "POST"), (308, "POST"), (301, "PUT"), (302, "PUT")]
)
async def test_a_body_is_not_sent_on_by_a_redirect_to_another_origin(
    tmp_path: Path, status: int, method: str
) -> None:
    first, other = Site("127.0.0.1"), Site("127.0.0.1")
    await first.start()
    await other.start()
    try:
        other.routes["/b"] = text("got it")
        first.routes["/a"] = _redirect(f"{other.base}/b", status)
        params = {"url": f"{first.base}/a", "post_payload": SECRET}
        async with open_gate(tmp_path, fast_settings()) as context:
            with pytest.raises(RedirectRefusedError, match=f"a {status} would send the {method}"):
                await fetch(context, params, method=method)
    finally:
        await first.stop()
        await other.stop()
    assert other.seen == Counter()


async def test_a_post_turned_into_a_get_drops_the_headers_of_its_body(tmp_path: Path) -> None:
    seen: list[tuple[str, str | None, bytes]] = []

    async def answer(request: web.Request) -> web.Response:
        seen.append((request.method, request.headers.get("Content-Type"), await request.read()))
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_route("*", "/a", lambda r: web.Response(status=303, headers={"Location": "/b"}))
    app.router.add_route("*", "/b", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    headers = {"content-type": "application/json", "X-Kept": "1"}
    try:
        async with open_gate(tmp_path, fast_settings()) as context:
            url = f"http://127.0.0.1:{port}/a"
            await fetch(context, {"url": url, "headers": headers}, method="POST", data=b"{}")
    finally:
        await runner.cleanup()
    assert seen == [("GET", None, b"")]


async def test_a_same_origin_307_keeps_the_body_and_put_sends_its_json(tmp_path: Path) -> None:
    seen: list[tuple[str, bytes]] = []
    app = web.Application()
    app.router.add_route("*", "/a", lambda r: web.Response(status=307, headers={"Location": "/b"}))
    app.router.add_route("*", "/b", _echo(seen))
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        async with open_gate(tmp_path, fast_settings()) as context:
            base = f"http://127.0.0.1:{port}"
            await fetch(context, {"url": f"{base}/a", "post_payload": SECRET})
            await fetch(context, {"url": f"{base}/b", "post_payload": SECRET}, method="PUT")
    finally:
        await runner.cleanup()
    assert seen == [("POST", b'{"password": "hunter2"}'), ("PUT", b'{"password": "hunter2"}')]


async def test_a_head_of_a_resource_larger_than_the_cap_is_answered(tmp_path: Path) -> None:
    site = Site("127.0.0.1")
    site.routes["/big"] = lambda s, request: web.Response(body=b"x" * 4096)
    await site.start()
    try:
        small = dataclasses.replace(fast_settings(), max_body_bytes=1024)
        async with open_gate(tmp_path, small) as context:
            answer = await fetch(context, {"url": f"{site.base}/big"}, method="HEAD")
    finally:
        await site.stop()
    assert (answer.status, answer.body, answer.headers["Content-Length"]) == (200, b"", "4096")
