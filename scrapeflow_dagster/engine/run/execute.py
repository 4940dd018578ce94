"""`execute_async`: run a chain of executors over a stream of tasks, crash-safely.

For each task, executors run in order. After every executor the task's status file is saved
atomically, so a crash loses at most the step in flight, and the next run redoes only what had
not finished. Recognised failures (network, timeouts, `RuntimeError`) are recorded in the task's
status and stop that task's chain; anything else is a bug: sibling tasks are cancelled cleanly
(before the HTTP session closes) and the exception propagates.
"""

import asyncio
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import aiohttp

from scrapeflow_dagster.engine.errors import InvalidTaskError
from scrapeflow_dagster.engine.gate.opening import guarded_session, session_for
from scrapeflow_dagster.engine.gate.task_fetch import fetch_for_task
from scrapeflow_dagster.engine.polite.addresses import AddressGuard
from scrapeflow_dagster.engine.polite.gate import Politeness
from scrapeflow_dagster.engine.polite.robots import POLITE_DIR
from scrapeflow_dagster.engine.proxies import ProxyProvider
from scrapeflow_dagster.engine.render.browser import RunBrowser
from scrapeflow_dagster.engine.run.context import (
    Context,
    Executor,
    StepCallback,
    Tasks,
    executor_name,
)
from scrapeflow_dagster.engine.run.deadlines import StepDeadlines
from scrapeflow_dagster.engine.run.feed import Grow, TaskFeed
from scrapeflow_dagster.engine.run.runner import Runner
from scrapeflow_dagster.engine.run.task_session import TaskSession
from scrapeflow_dagster.engine.settings import (
    DEFAULT_MAX_PARALLELISM,
    DEFAULT_TIMEOUT_SECONDS,
    ScrapeSettings,
)
from scrapeflow_dagster.engine.state.locks import TaskLocks
from scrapeflow_dagster.engine.state.schema import Params
from scrapeflow_dagster.engine.tasks.keys import validate_key

# robots.txt cache and per-host slot files, beside the task locks (`.locks/`): a leading dot keeps
# them out of status scans, and every run over the same folder shares them.


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
    before_write: Callable[[str], None] | None = None,
    requires: Sequence[str] = (),
    step_requires: Mapping[str, Sequence[str]] | None = None,
    max_age_seconds: float | None = None,
    grow: Grow | None = None,
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
        session: an aiohttp session to use instead of a new one (then it is not closed here):
            the intranet routes' and `context.unguarded_session`; public tasks' requests go
            through a guarded session of the run's own.
        on_step: called with a `StepResult` after every step of every task (and skips).
        before_write: called with a task's key before each write of its status file (a
            journaled `Ledger`'s `announce`).
        requires: executors that must have succeeded before this chain runs for a task (a
            step is also re-run when one of them ran after it: its output would be stale).
        step_requires: per executor name, the executors its output is built from (default:
            `requires`); a step that succeeded before one of them last ran is run again.
        max_age_seconds: re-run successful steps older than this (freshness).
        grow: given (in a worker thread, in batches) the keys whose chain succeeded or was
            skipped; the stored tasks whose keys it returns run in this pass too (a crawl
            streamed through one run, `feed.TaskFeed`).

    Returns:
        The keys whose whole chain succeeded or was skipped, in completion order.

    Raises:
        ValueError: a key is unsafe (`/`, `..`, `,`, control characters) or given twice.
        Exception: any unrecognised exception of an executor, after the other tasks were
            cancelled and every finished step saved (but those saved with a step that did
            not end, around `reads_stored_only` steps: they run again next time, see
            `runner`).
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    pairs = _iter_tasks(tasks)
    parallelism = max(1, max_parallelism or DEFAULT_MAX_PARALLELISM)
    settings = settings or ScrapeSettings()
    succeeded: list[str] = []
    guard = AddressGuard(enabled=settings.address_guard, allowed=settings.allowed_networks)
    async with (
        session_for(session, parallelism, settings) as live_session,
        guarded_session(guard, parallelism, settings) as guarded,
    ):
        guard.session = guarded
        if proxy_provider is not None:
            await proxy_provider.load(live_session)
        timeout_seconds = timeout if timeout is not None else DEFAULT_TIMEOUT_SECONDS
        deadlines = StepDeadlines(timeout_seconds)
        polite = Politeness(
            directory / POLITE_DIR,
            settings.polite,
            user_agent=settings.user_agent,
            wait_guard=deadlines.paused,
        )
        # Started by the run's first page marked `render: true`, if any; closed below.
        browser = RunBrowser(
            settings.render, user_agent=settings.user_agent, wait_guard=deadlines.paused
        )
        context = Context(
            dir=directory,
            session=TaskSession(live_session, guard),
            forced_executors=_forced_names(force_executors),
            semaphore=asyncio.Semaphore(parallelism),
            timeout_seconds=timeout_seconds,
            proxy_provider=proxy_provider,
            settings=settings,
            polite=polite,
            guard=guard,
            browser=browser,
            unguarded_session=live_session,
            fetcher=fetch_for_task,
        )
        locks = TaskLocks(directory)
        runner = Runner(
            executors,
            context,
            on_step=on_step,
            before_write=before_write,
            locks=locks,
            deadlines=deadlines,
            requires=requires,
            step_requires=step_requires,
            max_age_seconds=max_age_seconds,
        )

        # Discovery waits while more than a fifth of the workers' worth of tasks is queued,
        # unless a worker's worth of finished tasks waits for it (`feed`).
        feed = TaskFeed(pairs, grow, low_water=max(1, parallelism // 5), max_waiting=parallelism)

        async def worker() -> None:
            # Workers share one feed: tasks are pulled only when a worker is free.
            while (task := await feed.next()) is not None:
                key, params = task
                ok = await runner.run_task(key, params)
                if ok:
                    succeeded.append(key)
                feed.finished(key, succeeded=ok)

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
            await browser.aclose()
            await polite.aclose()
    return succeeded
