"""`execute_async` tests' helpers: status files read as any reader would, and toy executors."""

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from scrapeflow_dagster.engine.executor import Context, Executor, ExecutorResponse
from scrapeflow_dagster.engine.run.results import StepResult
from scrapeflow_dagster.engine.status import StatusData


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
