"""`execute_async`: run a chain of executors over a stream of tasks, crash-safely.

For each task, executors run in order. After every executor the task's status file is saved
atomically, so a crash loses at most the step in flight, and the next run redoes only what had
not finished. Recognised failures (network, timeouts, `RuntimeError`) are recorded in the task's
status and stop that task's chain; anything else is a bug: sibling tasks are cancelled cleanly
(before the HTTP session closes) and the exception propagates.
"""

import asyncio
import functools
import logging
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import aiohttp

from scrapeflow_dagster.engine.deadlines import StepDeadlines
from scrapeflow_dagster.engine.errors import ErrorKind, InvalidTaskError, StatusFileError
from scrapeflow_dagster.engine.keys import validate_key
from scrapeflow_dagster.engine.locks import TaskLocks
from scrapeflow_dagster.engine.proxies import ProxyProvider
from scrapeflow_dagster.engine.redact import redact
from scrapeflow_dagster.engine.results import StepResult
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.status import (
    SUCCESS,
    Params,
    StatusData,
    is_success,
    load_status,
    write_status,
)

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_MAX_PARALLELISM = 100

# scrapeflow's recognised failures: recorded per task, never fatal to the run.
RECOGNISED_ERRORS: tuple[type[BaseException], ...] = (
    aiohttp.ClientError,
    TimeoutError,
    RuntimeError,
)


class UpstreamMissingError(InvalidTaskError):
    """A step was asked for before the step it needs succeeded for that task."""


class Context(NamedTuple):
    "Each task gets the context as a parameter."

    # The directory for status files and binary blobs.
    dir: Path
    # To be used for async http requests.
    session: aiohttp.ClientSession | None
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


def executor_name(executor: Callable[..., Any]) -> str:
    """The name under which an executor's results are stored (its function name)."""
    return getattr(executor, "__name__", type(executor).__name__)


def _forced_names(force: Iterable[str | Callable[..., Any]] | str | None) -> list[str]:
    # scrapeflow documented names and ["all"] but only callables worked; accept all three.
    if force is None:
        return []
    if isinstance(force, str):
        return [force]
    return [f if isinstance(f, str) else executor_name(f) for f in force]


def _iter_tasks(tasks: Tasks) -> Iterator[tuple[str, Params | None]]:
    """Validate up front what can be (dicts, sequences); stream the rest lazily."""
    if isinstance(tasks, str | bytes):
        # Iterating it would run one task per character.
        raise InvalidTaskError(
            f"tasks must be a dict, a list of keys or an iterable of (key, params), not the"
            f" string {tasks[:40]!r}"
        )
    if isinstance(tasks, Mapping):
        for key in tasks:
            validate_key(key)
        return ((key, tasks[key]) for key in tasks)
    if isinstance(tasks, Sequence) and not isinstance(tasks, str):
        seen: set[str] = set()
        for item in tasks:
            key = validate_key(item[0] if isinstance(item, tuple) else item)
            if key in seen:
                raise InvalidTaskError(f"task key {key!r} is given twice")
            seen.add(key)
        return (item if isinstance(item, tuple) else (item, None) for item in tasks)
    return _stream(tasks)


def _stream(
    tasks: Iterable[str | tuple[str, Params | None]],
) -> Iterator[tuple[str, Params | None]]:
    seen: set[str] = set()
    for item in tasks:
        key, params = item if isinstance(item, tuple) else (item, None)
        validate_key(key)
        if key in seen:
            raise InvalidTaskError(f"task key {key!r} is given twice")
        seen.add(key)
        yield key, params


def _stamp(moment: datetime) -> str:
    """scrapeflow's `_last_run` format: naive UTC `YYYY-MM-DD HH:MM:SS.ffffff`."""
    return str(moment.replace(tzinfo=None))


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _error_text(exc: BaseException, timeout_seconds: float) -> str:
    message = str(exc)
    if isinstance(exc, TimeoutError) and not message:
        message = f"timed out after {timeout_seconds:g} s"
    return redact(message.replace("\n", " "))


def _error_kind(exc: BaseException) -> str:
    kind = getattr(exc, "kind", None)
    if isinstance(kind, ErrorKind):
        return kind.value
    if isinstance(exc, aiohttp.ClientResponseError):
        return ErrorKind.PERMANENT.value
    if isinstance(exc, aiohttp.ClientError | TimeoutError):
        return ErrorKind.TRANSIENT.value
    return ErrorKind.PERMANENT.value


class _Fields:
    """The status-file field names of one executor, built once per run instead of per step."""

    __slots__ = (
        "attempts",
        "error_kind",
        "failures",
        "last_run",
        "name",
        "proxy",
        "started",
        "status",
    )

    def __init__(self, name: str) -> None:
        self.name = name
        self.status = f"{name}_status"
        self.started = f"{name}_started"
        self.last_run = f"{name}_last_run"
        self.attempts = f"{name}_attempts"
        self.failures = f"{name}_failures"
        self.error_kind = f"{name}_error_kind"
        self.proxy = f"{name}_proxy"


class _Runner:
    """Runs one chain of executors over tasks; holds what every task shares."""

    def __init__(
        self,
        executors: Sequence[Executor],
        context: Context,
        *,
        on_step: StepCallback | None,
        locks: TaskLocks,
        deadlines: StepDeadlines,
        requires: Sequence[str] = (),
        max_age_seconds: float | None = None,
    ) -> None:
        self.executors = list(executors)
        self.names = [executor_name(e) for e in executors]
        self.steps = [(e, _Fields(n)) for e, n in zip(self.executors, self.names, strict=True)]
        self.context = context
        self.on_step = on_step
        self.locks = locks
        self.deadlines = deadlines
        self.forced = set(context.forced_executors)
        self.requires = list(requires)
        self.max_age_seconds = max_age_seconds

    def _is_forced(self, name: str) -> bool:
        return "all" in self.forced or name in self.forced

    def _emit(self, result: StepResult) -> None:
        if self.on_step is not None:
            self.on_step(result)

    def _is_done(self, status: StatusData, name: str) -> bool:
        """Succeeded, not older than `max_age_seconds`, not older than what it was built from."""
        if not is_success(status, name):
            return False
        last_run = str(status.get(f"{name}_last_run", ""))
        if any(str(status.get(f"{up}_last_run", "")) > last_run for up in self.requires):
            return False
        if self.max_age_seconds is not None:
            cutoff = _utcnow() - timedelta(seconds=self.max_age_seconds)
            return last_run >= str(cutoff.replace(tzinfo=None))
        return True

    def _missing_requirement(self, status: StatusData) -> str | None:
        for up in self.requires:
            if not is_success(status, up):
                return up
        return None

    def _fail_task(self, key: str, exc: Exception, started: datetime) -> None:
        """Report a task that could not even start (bad params, corrupt status file)."""
        # Logged too: a caller without `on_step` would otherwise only miss the key in the result.
        if not isinstance(exc, UpstreamMissingError):  # expected, and reported by the caller
            logger.warning("task %r not run: %s", key, redact(str(exc)))
        self._emit(
            StepResult(
                key=key,
                executor=self.names[0] if self.names else "",
                outcome="ERROR",
                started=started,
                ended=_utcnow(),
                error_class=type(exc).__name__,
                error_kind="upstream" if isinstance(exc, UpstreamMissingError) else "permanent",
                message=redact(str(exc)),
            )
        )

    def _load(self, key: str, params: Params | None) -> StatusData:
        status = load_status(self.context.dir, key)
        if status is None:
            if params is None:
                raise InvalidTaskError(f"task {key!r} has no params: pass them or add the task")
            # The key was validated when it was read from `tasks`.
            return {"name": key, "params": dict(params)}
        if params is not None and status.get("params") != params:
            status["params"] = dict(params)
        status.setdefault("name", key)
        return status

    async def run_task(self, key: str, params: Params | None) -> bool:
        """Run the chain for one task under its lock; True when every step ended well."""
        # One coroutine frame for lock and chain: every await below resumes through each frame
        # of the stack, so a task's stack is kept shallow.
        locks = self.locks
        if not locks.try_acquire(key):
            await locks.acquire(key)
        try:
            started = _utcnow()
            try:
                status = self._load(key, params)
            except (StatusFileError, InvalidTaskError) as exc:
                self._fail_task(key, exc, started)
                return False
            missing = self._missing_requirement(status)
            if missing is not None:
                self._fail_task(key, UpstreamMissingError(f"{missing} has not succeeded"), started)
                return False
            upstream_ran = False
            for executor, fields in self.steps:
                name = fields.name
                # A step re-runs when forced, when it has not succeeded, or when a step before
                # it ran again in this chain (its output would be stale otherwise).
                if not (upstream_ran or self._is_forced(name)) and self._is_done(status, name):
                    self._emit(_skipped(key, name, status))
                    continue
                ok = await self._run_step(executor, fields, key, status, started)
                upstream_ran = True
                started = _utcnow()
                if not ok:
                    return False
            return True
        finally:
            locks.release(key)

    async def _run_step(
        self,
        executor: Executor,
        fields: _Fields,
        key: str,
        status: StatusData,
        started: datetime,
    ) -> bool:
        name = fields.name
        status[fields.started] = _stamp(started)
        try:
            with self.deadlines.bound():
                response = await executor(self.context, status)
        except RECOGNISED_ERRORS as exc:
            self._record_error(key, fields, status, exc, started)
            return False
        output, ok = response if isinstance(response, tuple) else (response, True)
        if not ok:
            error = RuntimeError(str(output.get("error", "executor reported a failure")))
            self._record_error(key, fields, status, error, started)
            return False
        ended = _utcnow()
        attempts = int(output.get("attempts", 1))
        status[name] = output
        status[fields.status] = SUCCESS
        status[fields.last_run] = _stamp(ended)
        status[fields.attempts] = attempts
        status[fields.failures] = 0
        status.pop(fields.error_kind, None)
        write_status(self.context.dir, key, status)
        if self.on_step is None:
            return True
        self.on_step(
            StepResult(
                key=key,
                executor=name,
                outcome="SUCCESS",
                started=started,
                ended=ended,
                attempts=attempts,
                http_status=output.get("http_status"),
                size=output.get("size"),
                md5=output.get("content"),
                proxy_host=output.get("proxy"),
                url=status["params"].get("url"),
            )
        )
        return True

    def _record_error(
        self, key: str, fields: _Fields, status: StatusData, exc: BaseException, started: datetime
    ) -> None:
        name = fields.name
        message = _error_text(exc, self.context.timeout_seconds)
        kind = _error_kind(exc)
        attempts = int(getattr(exc, "attempts", 1))
        ended = _utcnow()
        status.pop(name, None)
        status[fields.status] = f"ERROR {type(exc).__name__}::{message}"
        status[fields.last_run] = _stamp(ended)
        status[fields.attempts] = attempts
        status[fields.error_kind] = kind
        status[fields.failures] = int(status.get(fields.failures, 0)) + 1
        proxy = getattr(exc, "proxy_host", None)
        if proxy:
            status[fields.proxy] = proxy
        write_status(self.context.dir, key, status)
        self._emit(
            StepResult(
                key=key,
                executor=name,
                outcome="ERROR",
                started=started,
                ended=ended,
                error_class=type(exc).__name__,
                error_kind=kind,
                message=message,
                attempts=attempts,
                http_status=getattr(exc, "status", None),
                proxy_host=proxy,
                url=status["params"].get("url"),
            )
        )


def _skipped(key: str, name: str, status: StatusData) -> StepResult:
    now = _utcnow()
    output = status.get(name) or {}
    return StepResult(
        key=key,
        executor=name,
        outcome="SKIPPED",
        started=now,
        ended=now,
        attempts=0,
        http_status=output.get("http_status") if isinstance(output, dict) else None,
        size=output.get("size") if isinstance(output, dict) else None,
        md5=output.get("content") if isinstance(output, dict) else None,
        url=status.get("params", {}).get("url"),
    )


@asynccontextmanager
async def _session_for(
    session: aiohttp.ClientSession | None, parallelism: int, settings: ScrapeSettings
) -> AsyncIterator[aiohttp.ClientSession]:
    if session is not None:
        yield session
        return
    connector = aiohttp.TCPConnector(limit=parallelism, limit_per_host=0, ssl=settings.verify_tls)
    # No shared cookie jar: tasks must not leak cookies into each other; a task's own cookies
    # come from its params.
    async with aiohttp.ClientSession(
        connector=connector,
        headers={"User-Agent": settings.user_agent},
        cookie_jar=aiohttp.DummyCookieJar(),
    ) as own:
        yield own


async def execute_async(
    executors: Sequence[Executor],
    directory: Path,
    tasks: Tasks,
    timeout: float | None = None,
    force_executors: Iterable[str | Callable[..., Any]] | str | None = None,
    max_parallelism: int | None = None,
    proxy_provider: ProxyProvider | None = None,
    *,
    settings: ScrapeSettings | None = None,
    session: aiohttp.ClientSession | None = None,
    on_step: StepCallback | None = None,
    requires: Sequence[str] = (),
    max_age_seconds: float | None = None,
) -> list[str]:
    """Run `executors` in order for every task, at most `max_parallelism` tasks at a time.

    Args:
        executors: the chain; each result is stored under the executor's function name.
        directory: where `<key>.status.json` and blobs go (created if missing).
        tasks: `{key: params}` the first time; later, keys alone reuse stored params. Any
            iterable of keys or `(key, params)` pairs is consumed as a stream, so a million
            tasks never become a million coroutines.
        timeout: seconds allowed for each executor, retries included (default 30).
        force_executors: executor names or callables to re-run although they succeeded, or
            `"all"` / `["all"]`.
        max_parallelism: tasks in flight at once (default 100).
        proxy_provider: where `scrape` gets proxies; loaded before the first task.
        settings: request limits and retry policy (defaults: see `ScrapeSettings`).
        session: an aiohttp session to use instead of a new one (then it is not closed here).
        on_step: called with a `StepResult` after every step of every task (and skips).
        requires: executors that must have succeeded before this chain runs for a task (a
            step is also re-run when one of them ran after it: its output would be stale).
        max_age_seconds: re-run successful steps older than this (freshness).

    Returns:
        The keys whose whole chain succeeded or was skipped, in completion order.

    Raises:
        ValueError: a key is unsafe (`/`, `..`, `,`, control characters) or given twice.
        Exception: any unrecognised exception of an executor, after the other tasks were
            cancelled and every finished step saved.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    pairs = _iter_tasks(tasks)
    parallelism = max(1, max_parallelism or DEFAULT_MAX_PARALLELISM)
    settings = settings or ScrapeSettings()
    succeeded: list[str] = []
    async with _session_for(session, parallelism, settings) as live_session:
        if proxy_provider is not None:
            await proxy_provider.load(live_session)
        context = Context(
            dir=directory,
            session=live_session,
            forced_executors=_forced_names(force_executors),
            semaphore=asyncio.Semaphore(parallelism),
            timeout_seconds=timeout if timeout is not None else DEFAULT_TIMEOUT_SECONDS,
            proxy_provider=proxy_provider,
            settings=settings,
        )
        locks = TaskLocks(directory)
        deadlines = StepDeadlines(context.timeout_seconds)
        runner = _Runner(
            executors,
            context,
            on_step=on_step,
            locks=locks,
            deadlines=deadlines,
            requires=requires,
            max_age_seconds=max_age_seconds,
        )

        async def worker() -> None:
            # Workers share one iterator: tasks are pulled only when a worker is free.
            for key, params in pairs:
                if await runner.run_task(key, params):
                    succeeded.append(key)

        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(parallelism):
                    group.create_task(worker())
        except BaseExceptionGroup as group_error:
            # The TaskGroup already cancelled and awaited every sibling; surface the cause.
            raise group_error.exceptions[0] from None
        finally:
            deadlines.close()
            locks.close()
    return succeeded
