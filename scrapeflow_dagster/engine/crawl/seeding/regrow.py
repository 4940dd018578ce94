"""Crawls that grow in place: a seed given new crawl settings (a deeper `max_depth`, a wider
scope, a larger budget, other patterns) hands them to every task of its crawl and reopens the
crawl's parsed pages, so the next discovery judges their links again from the stored pages and
only what is new in the crawl gets fetched.
"""

import time
from collections.abc import Sequence

from scrapeflow_dagster.engine.crawl.frontier.batches import frontier_lock
from scrapeflow_dagster.engine.crawl.frontier.expanded_and_added import expanded_keys, reopen
from scrapeflow_dagster.engine.history import Ledger, TaskRow
from scrapeflow_dagster.engine.state.files import iter_statuses, load_status, write_status
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.locks import TaskLocks
from scrapeflow_dagster.engine.state.params import CRAWL, CRAWL_SETTINGS
from scrapeflow_dagster.engine.state.schema import Params, utc_now

# How long a task held by a run may keep its new settings waiting.
LOCK_WAIT_SECONDS = 30.0
_POLL_SECONDS = 0.05


def regrow(layout: DataLayout, seeds: Sequence[str], *, ledger: Ledger) -> list[str]:
    """Give every task of the crawls of `seeds` (seed keys) its seed's crawl settings, and
    reopen the expanded pages among them for discovery.

    Each task is rewritten under its task lock (a run holding it is waited for), keeping its
    request, `depth`, `parent` and `crawl`; its new params go to DuckDB through `ledger`.

    Returns:
        The reopened keys: the crawl's parsed pages whose links the next discovery takes in
        again (already known links stay known; links now within the crawl are added).

    Raises:
        TimeoutError: naming a task a run held for longer than `LOCK_WAIT_SECONDS`.
    """
    status_dir = layout.status_dir
    wanted: dict[str, Params] = {}
    for seed in seeds:
        status = load_status(status_dir, seed)
        params = (status or {}).get("params") or {}
        wanted[seed] = {name: params[name] for name in CRAWL_SETTINGS if name in params}
    members: list[str] = []
    locks = TaskLocks(status_dir)
    try:
        for key, status in iter_statuses(status_dir):
            params = status.get("params") or {}
            crawl = key if key in wanted else params.get(CRAWL)
            if crawl not in wanted:
                continue
            members.append(key)
            settings = wanted[crawl]
            if all(params.get(name) == settings.get(name) for name in CRAWL_SETTINGS):
                continue
            _take_settings(layout, locks, key, settings, ledger)
    finally:
        locks.close()
    expanded = expanded_keys(layout)
    reopened = [key for key in members if key in expanded]
    with frontier_lock(layout):
        reopen(layout, reopened)
    return reopened


def _take_settings(
    layout: DataLayout, locks: TaskLocks, key: str, settings: Params, ledger: Ledger
) -> None:
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while not locks.try_acquire(key):
        if time.monotonic() > deadline:
            raise TimeoutError(f"task {key!r} was held by a run for over {LOCK_WAIT_SECONDS} s")
        time.sleep(_POLL_SECONDS)
    try:
        status = load_status(layout.status_dir, key)  # again, under the lock
        if status is None:
            return
        params = status.get("params") or {}
        kept = {name: value for name, value in params.items() if name not in CRAWL_SETTINGS}
        status["params"] = {**kept, **settings}
        write_status(layout.status_dir, key, status)
    finally:
        locks.release(key)
    new = status["params"]
    ledger.record_task(
        TaskRow(
            key=key,
            url=str(new.get("url")),
            method="POST" if new.get("post_payload") is not None else "GET",
            params=new,
            added_at=utc_now(),
        )
    )
