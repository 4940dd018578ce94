"""scrapeflow's `executor` module (compatibility): `execute_async`, `Context`, `taskify`.

The engine's run stage lives in `engine.run`; this module keeps scrapeflow's import path
(`from scrapeflow_dagster.engine.executor import execute_async, Context, taskify`) working.
"""

from scrapeflow_dagster.engine.errors import ScrapeError, UpstreamMissingError
from scrapeflow_dagster.engine.executors.stored_body import page_url
from scrapeflow_dagster.engine.gate.answer import Fetched
from scrapeflow_dagster.engine.run.context import (
    RECOGNISED_ERRORS,
    Context,
    Executor,
    ExecutorOutput,
    ExecutorResponse,
    StepCallback,
    TaskFunction,
    Tasks,
    declared_output,
    declares_output,
    executor_name,
    reads_stored_only,
    taskify,
)
from scrapeflow_dagster.engine.run.execute import execute_async
from scrapeflow_dagster.engine.settings import DEFAULT_MAX_PARALLELISM, DEFAULT_TIMEOUT_SECONDS
from scrapeflow_dagster.engine.tasks.urls import resolve_link

__all__ = [
    "DEFAULT_MAX_PARALLELISM",
    "DEFAULT_TIMEOUT_SECONDS",
    "RECOGNISED_ERRORS",
    "Context",
    "Executor",
    "ExecutorOutput",
    "ExecutorResponse",
    "Fetched",
    "ScrapeError",
    "StepCallback",
    "TaskFunction",
    "Tasks",
    "UpstreamMissingError",
    "declared_output",
    "declares_output",
    "execute_async",
    "executor_name",
    "reads_stored_only",
    "resolve_link",
    "page_url",
    "taskify",
]
