"""`execute_async` run again: succeeded steps are skipped, stored params reused, steps forced."""

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scrapeflow_dagster.engine.executor import Executor, execute_async
from scrapeflow_dagster.engine.run.results import StepResult
from scrapeflow_dagster.engine.scrape import scrape
from scrapeflow_dagster.engine.status import StatusData
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.engine.run.helpers import collect, counting, read


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
