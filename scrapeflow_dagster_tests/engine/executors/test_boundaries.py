"""Limits: tasks streamed with bounded memory, parallelism, body cap, key and line lengths."""

import asyncio
import gzip
import itertools
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from aiohttp import web

from scrapeflow_dagster.engine.executor import (
    DEFAULT_MAX_PARALLELISM,
    Context,
    ExecutorResponse,
    execute_async,
)
from scrapeflow_dagster.engine.scrape import scrape
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.status import StatusData, load_status
from scrapeflow_dagster.engine.tasks.intake import (
    MAX_LINE_BYTES,
    LineError,
    TaskSpec,
    read_task_file,
)
from scrapeflow_dagster.engine.tasks.keys import MAX_KEY_LENGTH
from scrapeflow_dagster.site.server import LocalSite

# Bounded memory: tasks are pulled only when a worker is free.


class Flow:
    """Counts tasks pulled from the stream and finished by the executor."""

    def __init__(self) -> None:
        self.pulled = 0
        self.finished = 0
        self.most_in_flight = 0
        self.most_asyncio_tasks = 0

    def stream(self, keys: Iterator[int]) -> Iterator[tuple[str, StatusData]]:
        for n in keys:
            self.pulled += 1
            self.most_in_flight = max(self.most_in_flight, self.pulled - self.finished)
            yield f"k{n}", {"n": n}


async def test_a_stream_of_5000_keys_is_consumed_lazily(tmp_path: Path) -> None:
    flow = Flow()
    parallelism = 20

    async def step(context: Context, status: StatusData) -> ExecutorResponse:
        flow.most_asyncio_tasks = max(flow.most_asyncio_tasks, len(asyncio.all_tasks()))
        await asyncio.sleep(0)
        flow.finished += 1
        return {"n": status["params"]["n"]}, True

    done = await execute_async(
        [step], tmp_path, flow.stream(iter(range(5000))), max_parallelism=parallelism
    )

    assert len(done) == 5000 == flow.finished
    assert flow.most_in_flight <= parallelism
    # One asyncio task per worker (plus the test's own), never one per key.
    assert flow.most_asyncio_tasks <= parallelism + 2


async def test_an_endless_stream_is_never_drained(tmp_path: Path) -> None:
    flow = Flow()
    parallelism = 10

    class Enough(Exception):
        pass

    async def step(context: Context, status: StatusData) -> ExecutorResponse:
        await asyncio.sleep(0)
        flow.finished += 1
        if flow.finished == 200:
            raise Enough
        return {}, True

    with pytest.raises(Enough):
        await execute_async(
            [step], tmp_path, flow.stream(itertools.count()), max_parallelism=parallelism
        )

    # A worker pulls only after finishing; a few finish while the failure cancels the rest.
    assert flow.most_in_flight <= parallelism
    assert flow.pulled <= flow.finished + parallelism < 200 + 3 * parallelism


# Parallelism.


async def concurrency_of(directory: Path, tasks: int, max_parallelism: int | None) -> int:
    running = most = 0

    async def step(context: Context, status: StatusData) -> ExecutorResponse:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.01)
        running -= 1
        return {}, True

    keys: dict[str, StatusData] = {f"k{n}": {} for n in range(tasks)}
    assert len(await execute_async([step], directory, keys, max_parallelism=max_parallelism)) == (
        tasks
    )
    return most


# Two keys on one lock stripe wait for each other, so the peak may fall a little short.


async def test_max_parallelism_one_is_serial(tmp_path: Path) -> None:
    assert await concurrency_of(tmp_path, 20, 1) == 1


async def test_max_parallelism_is_never_exceeded(tmp_path: Path) -> None:
    assert 5 <= await concurrency_of(tmp_path, 60, 7) <= 7


async def test_default_parallelism_is_100(tmp_path: Path) -> None:
    assert DEFAULT_MAX_PARALLELISM == 100
    assert 80 <= await concurrency_of(tmp_path, 300, None) <= 100


# Body cap.


@pytest.mark.parametrize(("size", "ok"), [(1000, True), (1001, False)])
async def test_body_cap_boundary(
    site: LocalSite, tmp_path: Path, settings: ScrapeSettings, size: int, ok: bool
) -> None:
    capped = ScrapeSettings(max_body_bytes=1000, retry=settings.retry)

    await execute_async(
        [scrape], tmp_path, {"t": {"url": site.url(f"/big/{size}")}}, settings=capped
    )

    status = load_status(tmp_path, "t")
    assert status is not None
    if ok:
        assert status["scrape"]["size"] == 1000
    else:
        assert status["scrape_status"].startswith("ERROR BodyTooLargeError::body of 1001 bytes")


@asynccontextmanager
async def serve(app: web.Application) -> AsyncIterator[str]:
    """Run `app` on a free 127.0.0.1 port; yields its base URL."""
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def bomb(request: web.Request) -> web.Response:
    """2 MB of text in a ~2 kB gzip body: Content-Length tells nothing of the decoded size."""
    body = gzip.compress(b"a" * 2_000_000)
    return web.Response(body=body, headers={"Content-Encoding": "gzip"}, content_type="text/plain")


async def chunked(request: web.Request) -> web.StreamResponse:
    """`n` bytes in chunks, with no Content-Length."""
    response = web.StreamResponse()
    response.enable_chunked_encoding()
    await response.prepare(request)
    for _ in range(int(request.query["n"]) // 1000):
        await response.write(b"b" * 1000)
    await response.write_eof()
    return response


@pytest.mark.parametrize(
    ("path", "ok"),
    [("/bomb", False), ("/chunked?n=100000", True), ("/chunked?n=101000", False)],
)
async def test_body_cap_counts_decoded_bytes(tmp_path: Path, path: str, ok: bool) -> None:
    app = web.Application()
    app.add_routes([web.get("/bomb", bomb), web.get("/chunked", chunked)])
    capped = ScrapeSettings(max_body_bytes=100_000)

    async with serve(app) as base:
        await execute_async([scrape], tmp_path, {"t": {"url": base + path}}, settings=capped)

    status = load_status(tmp_path, "t")
    assert status is not None
    if ok:
        assert status["scrape"]["size"] == 100_000
    else:
        assert status["scrape_status"] == (
            "ERROR BodyTooLargeError::body is over the cap of 100000 bytes (as decoded)"
        )
        assert not (tmp_path / "t.scrape").exists()


# Key and line lengths.


async def test_longest_key_fits_the_file_system(site: LocalSite, tmp_path: Path) -> None:
    key = "k" * MAX_KEY_LENGTH

    assert await execute_async([scrape], tmp_path, {key: {"url": site.url("/page/1")}}) == [key]
    assert (tmp_path / f"{key}.scrape").stat().st_size > 0
    with pytest.raises(ValueError):
        await execute_async([scrape], tmp_path, {key + "k": {"url": site.url("/page/1")}})


def test_line_length_boundary(tmp_path: Path) -> None:
    prefix = "http://example.com/"
    longest = prefix + "a" * (MAX_LINE_BYTES - len(prefix))
    path = tmp_path / "tasks.txt"
    path.write_text(f"{longest}\n{longest}b\nhttp://example.com/after\n")

    items = list(read_task_file(path))

    assert [type(i) for i in items] == [TaskSpec, LineError, TaskSpec]
    assert [i.line for i in items] == [1, 2, 3]
    assert isinstance(items[1], LineError)
    assert items[1].message == f"line is longer than {MAX_LINE_BYTES} bytes"
    assert isinstance(items[2], TaskSpec)
    assert items[2].params == {"url": "http://example.com/after"}


async def test_a_trickling_body_ends_with_the_request_timeout(tmp_path: Path) -> None:
    async with LocalSite(pages=1) as site:
        started = asyncio.get_running_loop().time()
        done = await execute_async(
            [scrape],
            tmp_path,
            {"t": {"url": site.url("/hostile/trickle")}},
            settings=ScrapeSettings(request_timeout_seconds=1.0),
        )
        took = asyncio.get_running_loop().time() - started
    status = load_status(tmp_path, "t")
    assert done == [] and status is not None
    assert status["scrape_status"] == "ERROR TransientError::TimeoutError: request timed out"
    assert took < 30  # the body would take 60 s
