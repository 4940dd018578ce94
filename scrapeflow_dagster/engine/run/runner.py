"""One chain of executors over one task at a time: lock, load, run each step, record it.

The task's status file is saved atomically (through `state.schema`'s `record_*`) after each
step, except that a step is saved with the next step's write when that next step is marked
`reads_stored_only` (validation, pages: it requests nothing), or when it is so marked itself
and only such steps come before it in the chain (a step that requests is never held across
another that requests). So the chain `scrape`, `validation`, `pages` writes each task's
status file once per pass, not after its fetch and again after the local steps. Each write
is a temp file created, written and renamed over the task's file: the one after the fetch
cost the chain ~0.4 ms of wall time per task on this 2-core machine's disk (3,000 tasks:
7.1-8.0 s with it, 6.2-6.3 s without, scrape alone 5.0-5.7 s; measured 2026-11-29). So a
crash (SIGKILL) loses at most the steps in flight and those saved with them: a kill while a
task's local steps run after its fetch redoes the fetch too, as a kill between the fetch's
body and its status write always could. A step's outcome is reported (`on_step`) only once
the status file holds it.
"""

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime

import aiohttp

from scrapeflow_dagster.engine.errors import (
    ErrorKind,
    InvalidTaskError,
    ScrapeError,
    StatusFileError,
    UpstreamMissingError,
)
from scrapeflow_dagster.engine.redact import redact
from scrapeflow_dagster.engine.run.context import (
    RECOGNISED_ERRORS,
    Context,
    Executor,
    StepCallback,
    executor_name,
    is_reads_stored_only,
)
from scrapeflow_dagster.engine.run.deadlines import StepDeadlines
from scrapeflow_dagster.engine.run.results import StepResult
from scrapeflow_dagster.engine.run.task_session import current_task
from scrapeflow_dagster.engine.state.files import load_status, write_status
from scrapeflow_dagster.engine.state.locks import TaskLocks
from scrapeflow_dagster.engine.state.schema import (
    Params,
    StatusData,
    is_fresh,
    is_success,
    record_error,
    record_start,
    record_success,
    utc_now,
)

logger = logging.getLogger(__name__)


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _error_text(exc: BaseException, timeout_seconds: float) -> str:
    message = str(exc)
    if isinstance(exc, TimeoutError) and not message:
        message = f"timed out after {timeout_seconds:g} s"
    return redact(message.replace("\n", " "))


def _error_kind(exc: BaseException) -> str:
    if isinstance(exc, ScrapeError | UpstreamMissingError):
        return exc.kind.value
    if isinstance(exc, aiohttp.ClientResponseError):
        return ErrorKind.PERMANENT.value
    if isinstance(exc, aiohttp.ClientError | TimeoutError):
        return ErrorKind.TRANSIENT.value
    return ErrorKind.PERMANENT.value


def _start_error_kind(exc: Exception) -> str:
    # Bad params or a corrupt status file will not fix themselves; a missing upstream will.
    return exc.kind.value if isinstance(exc, UpstreamMissingError) else ErrorKind.PERMANENT.value


class Runner:
    """Runs one chain of executors over tasks; holds what every task shares."""

    def __init__(
        self,
        executors: Sequence[Executor],
        context: Context,
        *,
        on_step: StepCallback | None,
        before_write: Callable[[str], None] | None = None,
        locks: TaskLocks,
        deadlines: StepDeadlines,
        requires: Sequence[str] = (),
        step_requires: Mapping[str, Sequence[str]] | None = None,
        max_age_seconds: float | None = None,
    ) -> None:
        self.executors = list(executors)
        self.names = [executor_name(e) for e in executors]
        self.steps = list(zip(self.executors, self.names, strict=True))
        # Per step: whether its status is saved with the next step's (see the module); every
        # step after one that ran runs too, so a later step follows for sure.
        local = [is_reads_stored_only(executor) for executor in self.executors]
        last = len(self.executors) - 1
        self.saved_later = [
            position < last and (local[position + 1] or all(local[: position + 1]))
            for position in range(len(self.executors))
        ]
        self.context = context
        self.on_step = on_step
        self.before_write = before_write
        self.locks = locks
        self.deadlines = deadlines
        self.forced = set(context.forced_executors)
        self.requires = list(requires)
        # What each step was built from (its own upstream executors, inside the chain or not):
        # a step older than one of them is stale even when the chain did not re-run it here.
        self.step_requires = {
            name: list((step_requires or {}).get(name, requires)) for name in self.names
        }
        self.max_age_seconds = max_age_seconds

    def _is_forced(self, name: str) -> bool:
        return "all" in self.forced or name in self.forced

    def _emit(self, result: StepResult) -> None:
        if self.on_step is not None:
            self.on_step(result)

    def _is_done(self, status: StatusData, name: str) -> bool:
        """Succeeded, not older than `max_age_seconds`, not older than what it was built from."""
        return is_fresh(
            status,
            name,
            requires=self.step_requires[name],
            max_age_seconds=self.max_age_seconds,
            now=utc_now(),
        )

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
                error_kind=_start_error_kind(exc),
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
            current_task.set(status)  # whose trust `context.session` and `fetch` act on
            missing = self._missing_requirement(status)
            if missing is not None:
                self._fail_task(key, UpstreamMissingError(f"{missing} has not succeeded"), started)
                return False
            upstream_ran = False
            # Outcomes of steps whose status is saved with the next step's (see the module).
            held: list[StepResult] = []
            for position, (executor, name) in enumerate(self.steps):
                # A step re-runs when forced, when it has not succeeded, or when a step before
                # it ran again in this chain (its output would be stale otherwise).
                if not (upstream_ran or self._is_forced(name)) and self._is_done(status, name):
                    self._emit(_skipped(key, name, status))
                    continue
                save_later = self.saved_later[position]
                ok = await self._run_step(executor, name, key, status, started, held, save_later)
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
        name: str,
        key: str,
        status: StatusData,
        started: datetime,
        held: list[StepResult],
        save_later: bool,
    ) -> bool:
        """Run one step and record it; `held` takes its outcome instead of the status file
        when `save_later`, and is reported (then emptied) once the status file is written."""
        record_start(status, name, started)
        try:
            with self.deadlines.bound():
                response = await executor(self.context, status)
        except RECOGNISED_ERRORS as exc:
            self._record_error(key, name, status, exc, started, held)
            return False
        output, ok = response if isinstance(response, tuple) else (response, True)
        if not ok:
            error = RuntimeError(str(output.get("error", "executor reported a failure")))
            self._record_error(key, name, status, error, started, held)
            return False
        ended = _utcnow()
        attempts = int(output.get("attempts", 1))
        record_success(status, name, output, ended=ended, attempts=attempts)
        if not save_later:
            self._write(key, status)
            self._emit_held(held)
        if self.on_step is None:
            return True
        result = StepResult(
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
            output=output,
        )
        if save_later:
            held.append(result)
        else:
            self.on_step(result)
        return True

    def _write(self, key: str, status: StatusData) -> None:
        """Save `key`'s status file, said first to `before_write` (a run's Ledger journal)."""
        if self.before_write is not None:
            self.before_write(key)
        write_status(self.context.dir, key, status)

    def _emit_held(self, held: list[StepResult]) -> None:
        """Report the outcomes saved with the step that just wrote the status file."""
        for result in held:
            self._emit(result)
        held.clear()

    def _record_error(
        self,
        key: str,
        name: str,
        status: StatusData,
        exc: BaseException,
        started: datetime,
        held: list[StepResult],
    ) -> None:
        message = _error_text(exc, self.context.timeout_seconds)
        kind = _error_kind(exc)
        scrape_error = exc if isinstance(exc, ScrapeError) else None
        attempts = scrape_error.attempts if scrape_error else 1
        proxy = scrape_error.proxy_host if scrape_error else None
        ended = _utcnow()
        record_error(
            status,
            name,
            error_class=type(exc).__name__,
            message=message,
            kind=kind,
            ended=ended,
            attempts=attempts,
            proxy=proxy,
        )
        self._write(key, status)
        self._emit_held(held)
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
                http_status=_http_status(exc),
                proxy_host=proxy,
                url=status["params"].get("url"),
            )
        )


def _http_status(exc: BaseException) -> int | None:
    if isinstance(exc, ScrapeError):
        return exc.status
    if isinstance(exc, aiohttp.ClientResponseError):
        return exc.status
    return None


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
