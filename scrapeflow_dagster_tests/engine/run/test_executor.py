"""The scrapeflow contract of `execute_async`: README examples, status format, skips, forcing.

Every test runs the real engine against the bundled local site and reads the real files.
"""

import asyncio
import hashlib
import json
import random
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from scrapeflow_dagster.engine.executor import (
    Context,
    Executor,
    ExecutorOutput,
    ExecutorResponse,
    execute_async,
    taskify,
)
from scrapeflow_dagster.engine.run.results import StepResult
from scrapeflow_dagster.engine.scrape import scrape, scrape_with_validation
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.status import StatusData
from scrapeflow_dagster.site.server import LocalSite

LAST_RUN_FORMAT = "%Y-%m-%d %H:%M:%S.%f"


def read(directory: Path, key: str) -> StatusData:
    """The status file of `key`, parsed with the standard library (as any reader would)."""
    data: StatusData = json.loads((directory / f"{key}.status.json").read_text())
    return data


def counting(name: str, calls: Counter[str]) -> Executor:
    """An executor named `name` that counts its runs and outputs the count."""

    async def executor(context: Context, status: StatusData) -> ExecutorResponse:
        calls[name] += 1
        return {"run": calls[name]}, True

    executor.__name__ = name
    return executor


def raising(name: str, exc: BaseException) -> Executor:
    """An executor named `name` that raises `exc`."""

    async def executor(context: Context, status: StatusData) -> ExecutorResponse:
        raise exc

    executor.__name__ = name
    return executor


def collect(results: list[StepResult]) -> Callable[[StepResult], None]:
    return results.append


async def test_readme_basic_usage(site: LocalSite, tmp_path: Path) -> None:
    tasks = {
        "google": {"url": site.url("/page/1")},
        "bing": {"url": site.url("/page/2")},
    }
    directory = tmp_path / "test"

    done = await execute_async(executors=[scrape], directory=directory, tasks=tasks)

    assert sorted(done) == ["bing", "google"]
    for key, params in tasks.items():
        status = read(directory, key)
        body = (directory / f"{key}.scrape").read_bytes()
        assert status["name"] == key
        assert status["params"] == params
        assert status["scrape_status"] == "SUCCESS"
        datetime.strptime(status["scrape_last_run"], LAST_RUN_FORMAT)
        output = status["scrape"]
        assert output["size"] == len(body) > 0
        assert output["content"] == hashlib.md5(body).hexdigest()
        assert output["response_headers"]["Content-Type"].startswith("text/html")
        assert f"<title>Page {params['url'][-1]}</title>".encode() in body


async def test_status_file_is_indented_json_named_after_the_key(
    site: LocalSite, tmp_path: Path
) -> None:
    await execute_async([scrape], tmp_path, {"k": {"url": site.url("/page/1")}})

    text = (tmp_path / "k.status.json").read_text()
    assert text.startswith('{\n  "name": "k",\n  "params": {\n    "url": ')
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


async def test_readme_taskify_executor(site: LocalSite, tmp_path: Path) -> None:
    @taskify
    async def scraper(context: Context, key: str, status: StatusData) -> ExecutorOutput:
        response_status: ExecutorOutput = {}
        url = status["params"]["url"]
        assert context.session is not None
        async with context.session.get(url=url) as response:
            code = response.status
            headers = {k: response.headers.getone(k) for k in response.headers.keys()}
            if code != 200:
                raise RuntimeError(f"HTTP response {code}")
            resp = await response.read()
            response_status["size"] = len(resp)
            response_status["content"] = hashlib.md5(resp).hexdigest()
            response_status["response_headers"] = headers
            with open(context.dir / f"{key}.scraper", mode="wb") as f:
                f.write(resp)
        return response_status

    tasks = {"ok": {"url": site.url("/page/5")}, "bad": {"url": site.url("/status/500")}}
    done = await execute_async([scraper], tmp_path, tasks)

    assert done == ["ok"]
    ok = read(tmp_path, "ok")
    assert ok["scraper_status"] == "SUCCESS"
    assert ok["scraper"]["size"] == len((tmp_path / "ok.scraper").read_bytes())
    bad = read(tmp_path, "bad")
    assert bad["scraper_status"] == "ERROR RuntimeError::HTTP response 500"
    assert "scraper" not in bad
    datetime.strptime(bad["scraper_last_run"], LAST_RUN_FORMAT)


def readme_callback(content: bytes) -> None:
    if content.find(b"<title>Page") < 0 or content.find(b"</html>") < 0:
        raise RuntimeError("Scrape missing data.")


async def test_readme_scrape_with_validation_three_argument_form(
    site: LocalSite, tmp_path: Path
) -> None:
    async def scrape(context: Context, status: StatusData) -> ExecutorOutput:
        """The README's user executor, named `scrape` so its results are stored as `scrape`."""
        await asyncio.sleep(0.01 * random.random())
        return await scrape_with_validation(context, status, readme_callback)

    tasks = {"page": {"url": site.url("/page/7")}, "captcha": {"url": site.url("/captcha")}}
    done = await execute_async([scrape], tmp_path, tasks)

    assert done == ["page"]
    page = read(tmp_path, "page")
    assert page["scrape_status"] == "SUCCESS"
    body = (tmp_path / "page.scrape").read_bytes()
    assert page["scrape"]["content"] == hashlib.md5(body).hexdigest()
    captcha = read(tmp_path, "captcha")
    assert captcha["scrape_status"] == "ERROR BlockedError::Scrape missing data."
    assert not (tmp_path / "captcha.scrape").exists()


async def test_scrape_with_validation_four_argument_form(site: LocalSite, tmp_path: Path) -> None:
    @taskify
    async def checked(context: Context, key: str, status: StatusData) -> ExecutorOutput:
        return await scrape_with_validation(context, key, status, readme_callback)

    tasks = {"page": {"url": site.url("/page/8")}, "captcha": {"url": site.url("/captcha")}}
    done = await execute_async([checked], tmp_path, tasks)

    assert done == ["page"]
    assert read(tmp_path, "page")["checked_status"] == "SUCCESS"
    assert (tmp_path / "page.scrape").read_bytes().startswith(b"<!DOCTYPE html>")
    # scrapeflow's bug: it read a file literally named `{key}.scrape`.
    assert not (tmp_path / "{key}.scrape").exists()
    assert read(tmp_path, "captcha")["checked_status"].startswith("ERROR BlockedError::")


async def test_succeeded_step_is_skipped_and_keeps_its_last_run(tmp_path: Path) -> None:
    calls: Counter[str] = Counter()
    step = counting("step", calls)
    await execute_async([step], tmp_path, {"k": {"url": "http://127.0.0.1/"}})
    before = (tmp_path / "k.status.json").read_bytes()
    results: list[StepResult] = []

    done = await execute_async(
        [step], tmp_path, {"k": {"url": "http://127.0.0.1/"}}, on_step=collect(results)
    )

    assert done == ["k"]
    assert calls["step"] == 1
    assert [r.outcome for r in results] == ["SKIPPED"]
    assert (tmp_path / "k.status.json").read_bytes() == before
    assert read(tmp_path, "k")["step_last_run"] == json.loads(before)["step_last_run"]


@pytest.mark.parametrize(
    "recorded",
    [
        {"step": {}, "step_status": "ERROR X::y"},
        {"step_status": "SUCCESS"},  # success without its output
    ],
)
async def test_step_without_a_standing_success_is_not_skipped(
    tmp_path: Path, recorded: StatusData
) -> None:
    (tmp_path / "k.status.json").write_text(json.dumps({"name": "k", "params": {}, **recorded}))
    calls: Counter[str] = Counter()

    assert await execute_async([counting("step", calls)], tmp_path, ["k"]) == ["k"]
    assert calls["step"] == 1
    assert read(tmp_path, "k")["step_status"] == "SUCCESS"


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


async def test_params_are_reused_when_only_keys_are_passed(site: LocalSite, tmp_path: Path) -> None:
    params = {"url": site.url("/page/3"), "cookies": {"c": "1"}}
    await execute_async([scrape], tmp_path, {"k": params})
    first_run = read(tmp_path, "k")["scrape_last_run"]

    done = await execute_async([scrape], tmp_path, ["k"], force_executors="all")

    assert done == ["k"]
    status = read(tmp_path, "k")
    assert status["params"] == params
    assert status["scrape_last_run"] > first_run
    assert status["scrape"]["final_url"] == params["url"]


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


def force_all(first: Executor, second: Executor) -> object:
    return "all"


def force_all_list(first: Executor, second: Executor) -> object:
    return ["all"]


def force_second_name(first: Executor, second: Executor) -> object:
    return ["second"]


def force_second_callable(first: Executor, second: Executor) -> object:
    return [second]


def force_first_name(first: Executor, second: Executor) -> object:
    return ["first"]


@pytest.mark.parametrize(
    ("force", "expected"),
    [
        (force_all, {"first": 2, "second": 2}),
        (force_all_list, {"first": 2, "second": 2}),
        (force_second_name, {"first": 1, "second": 2}),
        (force_second_callable, {"first": 1, "second": 2}),
        # A re-run step makes the steps after it stale, so they re-run too.
        (force_first_name, {"first": 2, "second": 2}),
    ],
)
async def test_force_executors(
    tmp_path: Path, force: Callable[[Executor, Executor], Any], expected: dict[str, int]
) -> None:
    calls: Counter[str] = Counter()
    chain = [counting("first", calls), counting("second", calls)]
    await execute_async(chain, tmp_path, {"k": {"url": "http://127.0.0.1/"}})

    done = await execute_async(chain, tmp_path, ["k"], force_executors=force(*chain))

    assert done == ["k"]
    assert dict(calls) == expected
    assert read(tmp_path, "k")["second"] == {"run": expected["second"]}


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


async def test_returns_succeeded_and_skipped_keys(site: LocalSite, tmp_path: Path) -> None:
    tasks = {
        "one": {"url": site.url("/page/1")},
        "two": {"url": site.url("/page/2")},
        "gone": {"url": site.url("/status/404")},
    }
    assert sorted(await execute_async([scrape], tmp_path, tasks)) == ["one", "two"]
    (tmp_path / "two.status.json").unlink()

    done = await execute_async([scrape], tmp_path, tasks)

    assert sorted(done) == ["one", "two"]
