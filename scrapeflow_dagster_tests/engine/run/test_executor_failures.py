"""`execute_async` when a step fails: the failure is recorded (with its message and kind), the
chain stops, output is removed, and only that task fails; timeouts included."""

import asyncio
import time
from collections import Counter
from pathlib import Path

import aiohttp
import pytest

from scrapeflow_dagster.engine.executor import Context, ExecutorResponse, execute_async
from scrapeflow_dagster.engine.run.results import StepResult
from scrapeflow_dagster.engine.scrape import scrape
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.status import StatusData
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.engine.run.helpers import collect, counting, raising, read


async def test_failure_removes_output_and_stops_the_chain(
    site: LocalSite, tmp_path: Path, settings: ScrapeSettings
) -> None:
    calls: Counter[str] = Counter()
    after = counting("after", calls)
    url = site.url("/flaky/switch?fail=0")
    assert await execute_async([scrape, after], tmp_path, {"k": {"url": url}}) == ["k"]
    assert read(tmp_path, "k")["scrape"]["size"] > 0
    async with aiohttp.ClientSession() as session:
        await session.post(site.url("/control/flaky/switch?fail=-1"))
    calls.clear()

    done = await execute_async(
        [scrape, after], tmp_path, ["k"], force_executors=["scrape"], settings=settings
    )

    assert done == []
    status = read(tmp_path, "k")
    assert "scrape" not in status
    assert status["scrape_status"] == "ERROR HttpStatusError::HTTP response 503"
    assert calls["after"] == 0


async def test_chain_stops_at_the_first_failure(tmp_path: Path) -> None:
    calls: Counter[str] = Counter()
    chain = [raising("first", RuntimeError("no")), counting("second", calls)]

    assert await execute_async(chain, tmp_path, {"k": {"url": "http://127.0.0.1/"}}) == []
    status = read(tmp_path, "k")
    assert status["first_status"] == "ERROR RuntimeError::no"
    assert "second_status" not in status
    assert calls["second"] == 0


async def test_key_without_params_or_status_fails_only_that_task(
    site: LocalSite, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    await execute_async([scrape], tmp_path, {"known": {"url": site.url("/page/1")}})
    results: list[StepResult] = []

    done = await execute_async(
        [scrape], tmp_path, ["known", "unknown"], on_step=collect(results), force_executors="all"
    )

    assert done == ["known"]
    failed = {r.key: r for r in results if not r.ok}
    assert list(failed) == ["unknown"]
    assert "has no params" in (failed["unknown"].message or "")
    assert "unknown" in caplog.text
    assert not (tmp_path / "unknown.status.json").exists()


async def test_executor_timeout_is_recorded_with_a_message(tmp_path: Path) -> None:
    async def sleeper(context: Context, status: StatusData) -> ExecutorResponse:
        await asyncio.sleep(10)
        return {}, True

    started = time.monotonic()
    done = await execute_async([sleeper], tmp_path, {"k": {"url": "http://x.test/"}}, timeout=0.2)

    assert done == []
    assert time.monotonic() - started < 5
    status = read(tmp_path, "k")
    assert status["sleeper_status"] == "ERROR TimeoutError::timed out after 0.2 s"
    assert status["sleeper_error_kind"] == "transient"


async def test_scrape_of_a_slow_page_times_out_with_a_message(
    site: LocalSite, tmp_path: Path
) -> None:
    done = await execute_async([scrape], tmp_path, {"k": {"url": site.url("/slow/5")}}, timeout=0.3)

    assert done == []
    status = read(tmp_path, "k")
    assert status["scrape_status"] == "ERROR TimeoutError::timed out after 0.3 s"
    assert not (tmp_path / "k.scrape").exists()


async def test_default_timeout_is_thirty_seconds(tmp_path: Path) -> None:
    seen: list[float] = []

    async def probe(context: Context, status: StatusData) -> ExecutorResponse:
        seen.append(context.timeout_seconds)
        return {}, True

    await execute_async([probe], tmp_path, {"k": {}})
    assert seen == [30.0]


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (RuntimeError("could not compute something"), "RuntimeError::could not compute something"),
        (aiohttp.ClientConnectionError("gone"), "ClientConnectionError::gone"),
        (aiohttp.ServerDisconnectedError(), "ServerDisconnectedError::Server disconnected"),
        (TimeoutError(), "TimeoutError::timed out after 30 s"),
        (
            RuntimeError("line one\nvia http://user:s3cret@proxy.test:8080 token=abc"),
            "RuntimeError::line one via http://***@proxy.test:8080 token=***",
        ),
    ],
)
async def test_recognised_errors_are_recorded_not_raised(
    tmp_path: Path, exc: BaseException, expected: str
) -> None:
    calls: Counter[str] = Counter()
    chain = [raising("step", exc), counting("later", calls)]
    tasks = {"a": {"url": "http://x.test/a"}, "b": {"url": "http://x.test/b"}}

    assert await execute_async(chain, tmp_path, tasks) == []

    for key in tasks:
        assert read(tmp_path, key)["step_status"] == f"ERROR {expected}"
    assert calls["later"] == 0


async def test_executor_reporting_failure_is_recorded(tmp_path: Path) -> None:
    async def refuses(context: Context, status: StatusData) -> ExecutorResponse:
        return {"error": "not today"}, False

    assert await execute_async([refuses], tmp_path, {"k": {}}) == []
    status = read(tmp_path, "k")
    assert status["refuses_status"] == "ERROR RuntimeError::not today"
    assert "refuses" not in status
