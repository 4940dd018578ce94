"""What an executor is and what it gets: the `Context`, the executor types, `taskify`."""

import asyncio
import functools
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import aiohttp

from scrapeflow_dagster.engine.gate.answer import Fetched, ResponseCallback
from scrapeflow_dagster.engine.polite.addresses import AddressGuard
from scrapeflow_dagster.engine.polite.gate import Politeness
from scrapeflow_dagster.engine.proxies import ProxyProvider
from scrapeflow_dagster.engine.render.browser import RunBrowser
from scrapeflow_dagster.engine.run.results import StepResult
from scrapeflow_dagster.engine.run.task_session import TaskSession
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.state.schema import Params, StatusData

# scrapeflow's recognised failures: recorded per task, never fatal to the run.
RECOGNISED_ERRORS: tuple[type[BaseException], ...] = (
    aiohttp.ClientError,
    TimeoutError,
    RuntimeError,
)


class TaskFetcher(Protocol):
    """How `Context.fetch` reaches the gate (`gate.task_fetch.fetch_for_task`, set by the run:
    the gate imports this module, so it is handed over rather than imported)."""

    async def __call__(
        self,
        context: "Context",
        url: str,
        *,
        method: str | None,
        headers: dict[str, str] | None,
        cookies: dict[str, str] | None,
        json: Any,
        data: bytes | None,
        validate: ResponseCallback | None,
    ) -> Fetched: ...


class Context(NamedTuple):
    "Each task gets the context as a parameter."

    # The directory for status files and binary blobs.
    dir: Path
    # For an executor's own requests (`TaskSession`): checked against its task's trust at the
    # socket, no redirect followed; `fetch` is the gate with robots.txt, host slots and redirects.
    session: aiohttp.ClientSession | TaskSession | None
    # List of executor names that need to be forced, or ["all"].
    forced_executors: list[str]
    # Limits concurrency (kept for executors written against scrapeflow).
    semaphore: asyncio.Semaphore
    # Bound on each executor, retries included.
    timeout_seconds: float
    # Proxy provider for http requests.
    proxy_provider: ProxyProvider | None
    # Request limits and retry policy of the scrape executors.
    settings: ScrapeSettings = ScrapeSettings()
    # robots.txt and per-host limits (None: requests go out unchecked, as scrapeflow's did).
    polite: Politeness | None = None
    # Keeps a public task's requests out of internal networks (None: no guard).
    guard: AddressGuard | None = None
    # The run's browser, for tasks marked `render: true` (started by the first; None: none).
    browser: RunBrowser | None = None
    # The run's plain aiohttp session: no address guard, robots.txt, host slots or proxy. The
    # gate sends intranet routes through it; an executor that uses it opts out of all that.
    unguarded_session: aiohttp.ClientSession | None = None
    # The gate, for `fetch` (None in a Context built by hand: `fetch` then says so).
    fetcher: TaskFetcher | None = None

    async def fetch(
        self,
        url: str,
        *,
        method: str | None = None,
        headers: dict[str, str] | None = None,
        cookies: dict[str, str] | None = None,
        json: Any = None,
        data: bytes | None = None,
        validate: ResponseCallback | None = None,
    ) -> Fetched:
        """Fetch `url` for the running task through the gate, as `scrape` fetches its page:
        the address guard of the task's trust, robots.txt, the host's slot and delay, the
        proxy (and the task's `country`), redirects followed and checked hop by hop, the body
        cap, retries with backoff.

        Args:
            url: an absolute http(s) URL, requested as written (resolve a link first with
                `engine.tasks.urls.resolve_link(page_url, href)`).
            method: GET by default (POST with `json` or `data`); HEAD, PUT, ... as given.
            headers: request headers, sent to `url`'s origin only (not after a redirect to
                another host, port or scheme).
            cookies: cookies, sent to `url`'s origin only.
            json: a JSON body (a POST by default).
            data: a raw body, sent as given.
            validate: called with the body; raising `RuntimeError` marks a block page.

        Returns:
            The answer: `body`, `status`, `headers`, `final_url`, `attempts`, `proxy`.

        Raises:
            ScrapeError: the request failed (refused by the guard or robots.txt, an HTTP
                error status, too large, too many redirects); its `kind` says whether a retry
                may help. Uncaught, it fails the task like any `RuntimeError`.
        """
        if self.fetcher is None:
            raise RuntimeError(
                "this Context has no gate to fetch through: executors get one from "
                "execute_async (or gate.opening.open_gate)"
            )
        return await self.fetcher(
            self,
            url,
            method=method,
            headers=headers,
            cookies=cookies,
            json=json,
            data=data,
            validate=validate,
        )


ExecutorOutput = dict[str, Any]
ExecutorResponse = tuple[StatusData, bool]
# scrapeflow's README executors return the output alone (`scrape_with_validation`'s result).
Executor = Callable[[Context, StatusData], Awaitable[ExecutorResponse | ExecutorOutput]]
TaskFunction = Callable[[Context, str, StatusData], Awaitable[ExecutorOutput]]
Tasks = Mapping[str, Params] | Sequence[str] | Iterable[str | tuple[str, Params | None]]
StepCallback = Callable[[StepResult], None]


def taskify(fn: TaskFunction) -> Executor:
    """Turn `async def fn(context, key, status) -> output` into an Executor named like `fn`."""

    @functools.wraps(fn)
    async def executor(context: Context, status: StatusData) -> ExecutorResponse:
        return await fn(context, status["name"], status), True

    return executor


# The attribute `reads_stored_only` sets on an executor.
READS_STORED_ONLY = "scrapeflow_reads_stored_only"


def reads_stored_only(executor: Executor) -> Executor:
    """Mark `executor` as one that only reads what earlier steps stored for its task (the body
    on disk, the status), with no request or outside state: redoing it costs little. The
    runner saves the outcome of the step before it with its own (one status file write
    instead of two), and its own with the next step's when only such steps come before it; a
    crash before a write redoes the steps it would have saved (`run.runner`)."""
    setattr(executor, READS_STORED_ONLY, True)
    return executor


def is_reads_stored_only(executor: Callable[..., Any]) -> bool:
    """Whether `executor` was marked with `reads_stored_only`."""
    return getattr(executor, READS_STORED_ONLY, False) is True


# The attribute `declares_output` sets on an executor, and the column types it takes (DuckDB's).
OUTPUT_COLUMNS = "scrapeflow_output_columns"
COLUMN_TYPES = frozenset(
    {"VARCHAR", "BIGINT", "DOUBLE", "BOOLEAN", "TIMESTAMP", "JSON"}
    | {f"{base}[]" for base in ("VARCHAR", "BIGINT", "DOUBLE", "BOOLEAN", "JSON")}
)


def declares_output(columns: Mapping[str, str]) -> Callable[[Executor], Executor]:
    """Declare the shape of an executor's output: field -> DuckDB type (`COLUMN_TYPES`), in
    order. Its rows in `outputs` then export with exactly these typed columns (a field the
    outputs lack is NULL, one they hold beyond these stays in `output`), and its asset shows
    them as its columns in the UI; without it, the types are found over the stored outputs.

    Raises:
        ValueError: naming the field whose type is not one of `COLUMN_TYPES`.
    """
    declared = dict(columns)
    for field, kind in declared.items():
        if kind not in COLUMN_TYPES:
            raise ValueError(
                f"output field {field!r}: type {kind!r} is not one of {sorted(COLUMN_TYPES)}"
            )

    def mark(executor: Executor) -> Executor:
        setattr(executor, OUTPUT_COLUMNS, declared)
        return executor

    return mark


def declared_output(executor: Callable[..., Any]) -> dict[str, str] | None:
    """The output shape `declares_output` gave `executor`, or None."""
    columns = getattr(executor, OUTPUT_COLUMNS, None)
    return dict(columns) if isinstance(columns, dict) else None


def executor_name(executor: Callable[..., Any]) -> str:
    """The name under which an executor's results are stored (its function name)."""
    return getattr(executor, "__name__", type(executor).__name__)
