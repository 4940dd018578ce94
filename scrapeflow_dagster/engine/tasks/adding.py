"""Adding tasks: params are stored (status file, then DuckDB) before anyone schedules them."""

import dataclasses
import os
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from scrapeflow_dagster.engine.errors import StatusFileError
from scrapeflow_dagster.engine.history import Ledger, TaskRow
from scrapeflow_dagster.engine.state.atomic import create_files_atomic, json_bytes
from scrapeflow_dagster.engine.state.files import create_status, load_status, write_status
from scrapeflow_dagster.engine.state.files import stored_keys as list_stored_keys
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.params import CRAWL, CRAWL_SETTINGS, DEPTH, PARENT
from scrapeflow_dagster.engine.state.schema import STATUS_SUFFIX, StatusData, new_status, utc_now
from scrapeflow_dagster.engine.tasks.intake import Item, LineError, TaskSpec

# The params a crawl may change on a stored task: its settings and its place in a crawl.
CRAWL_FIELDS = frozenset({*CRAWL_SETTINGS, DEPTH, PARENT, CRAWL})
# From this many tasks on, one listing of the status folder is cheaper than a lookup per task.
LIST_FOLDER_FROM = 1_000


@dataclass
class AddReport:
    """What adding a batch of tasks did."""

    keys: list[str] = field(default_factory=list)  # every valid key, new or already known
    new: int = 0
    unchanged: int = 0
    errors: list[LineError] = field(default_factory=list)
    # Stored tasks whose crawl settings the batch changed (`take_crawl_settings`).
    updated: list[str] = field(default_factory=list)


def add_tasks(
    layout: DataLayout,
    items: Iterable[Item],
    *,
    ledger: Ledger,
    stored_keys: Container[str] | None = None,
    take_crawl_settings: bool = False,
) -> AddReport:
    """Store the params of every valid task and collect the keys to add as partitions.

    A key already stored with other params is refused (the stored params win: nothing that
    was recorded is lost); the same key with the same params is simply known already. A
    status file is only ever created, never overwritten: a key that another process stores
    at the same moment is judged as if it had been stored before.

    Args:
        layout: the data dir.
        items: tasks, and the errors of lines that were not tasks.
        ledger: where new tasks are recorded for DuckDB.
        stored_keys: the keys that had a status file when the caller listed the folder
            (`state.files.stored_keys`); a key outside it is created without a lookup first,
            all of them in one pass (`create_files_atomic`). Default: the folder is listed
            here for `LIST_FOLDER_FROM` tasks or more, else every key is looked up (cheaper
            for a few tasks in a big folder).
        take_crawl_settings: a stored task whose params differ only in their crawl settings
            (`state.params`: depth, scope, budget, patterns, and its place in a crawl) takes
            the item's: what `scrapeflow crawl` does to grow a crawl in place (a deeper
            `--max-depth`, a wider scope, a page seeded again). Its request is never changed.
    """
    layout.ensure()
    status_dir = layout.status_dir  # a property that builds a Path: once, not per task
    report = AddReport()
    seen: dict[str, TaskSpec] = {}
    now = utc_now()
    items = list(items)
    if stored_keys is None and len(items) >= LIST_FOLDER_FROM:
        stored_keys = list_stored_keys(status_dir)
    created = _create_unlisted(status_dir, items, stored_keys) if stored_keys is not None else {}
    for item in items:
        if isinstance(item, LineError):
            report.errors.append(item)
            continue
        item = _with_stored_key(status_dir, item, stored_keys)
        first = seen.get(item.key)
        if first is not None:
            if first.params != item.params:
                report.errors.append(_conflict(item, f"{first.path}:{first.line}"))
            continue
        listed = stored_keys is None or item.key in stored_keys
        done = created.pop(item.key, None)  # what the one pass did for this key, if it tried
        try:
            if done is None:
                stored = _store(status_dir, item, look_first=listed)
            else:
                stored = None if done else _load_stored(status_dir, item.key)
        except StatusFileError as exc:
            report.errors.append(LineError(item.path, item.line, str(exc)))
            continue
        if stored is not None and stored.get("params") != item.params:
            fields = _differing(stored.get("params") or {}, item.params)
            if not (take_crawl_settings and fields <= CRAWL_FIELDS):
                report.errors.append(_conflict(item, "its status file", fields))
                continue
            stored["params"] = item.params
            write_status(status_dir, item.key, stored)
            report.updated.append(item.key)
            ledger.record_task(_task_row(item, now))
            seen[item.key] = item
            report.keys.append(item.key)
            continue
        seen[item.key] = item
        report.keys.append(item.key)
        if stored is not None:
            report.unchanged += 1
            continue
        ledger.record_task(_task_row(item, now))
        report.new += 1
    return report


def _task_row(item: TaskSpec, now: datetime) -> TaskRow:
    return TaskRow(
        key=item.key,
        url=str(item.params["url"]),
        method="POST" if item.params.get("post_payload") is not None else "GET",
        params=item.params,
        added_at=now,
    )


def _differing(stored: Mapping[str, Any], given: Mapping[str, Any]) -> set[str]:
    return {name for name in stored.keys() | given.keys() if stored.get(name) != given.get(name)}


def _with_stored_key(
    status_dir: Path, item: TaskSpec, stored_keys: Container[str] | None
) -> TaskSpec:
    """`item`, under its legacy key when that one is stored: a task stored before keys became
    readable keeps its key (stored keys never change)."""
    if item.legacy_key is not None and _is_stored(status_dir, item.legacy_key, stored_keys):
        return dataclasses.replace(item, key=item.legacy_key, legacy_key=None)
    return item


def _is_stored(status_dir: Path, key: str, stored_keys: Container[str] | None) -> bool:
    if stored_keys is not None:
        return key in stored_keys
    return os.path.exists(os.path.join(status_dir, key + STATUS_SUFFIX))


def _create_unlisted(
    status_dir: Path, items: list[Item], stored_keys: Container[str]
) -> dict[str, bool]:
    """Create the first status of every task whose key was not listed, in one pass over the
    folder (`create_files_atomic`); whether each was created, by key (False: it existed)."""
    todo: dict[str, bytes] = {}
    for item in items:
        if isinstance(item, LineError):
            continue
        key = _with_stored_key(status_dir, item, stored_keys).key
        if key not in stored_keys and key not in todo:
            todo[key] = json_bytes(new_status(key, item.params))
    names = [(key + STATUS_SUFFIX, data) for key, data in todo.items()]
    return dict(zip(todo, create_files_atomic(status_dir, names), strict=True))


def _store(status_dir: Path, item: TaskSpec, *, look_first: bool) -> StatusData | None:
    """The status `item.key` already had, or None when its first status was written now.

    Raises:
        StatusFileError: when the stored status is corrupt or foreign, or vanished.
    """
    stored = load_status(status_dir, item.key) if look_first else None
    if stored is not None:
        return stored
    if create_status(status_dir, item.key, new_status(item.key, item.params)):
        return None
    # Another process stored it since we looked (or since the caller listed the folder).
    return _load_stored(status_dir, item.key)


def _load_stored(status_dir: Path, key: str) -> StatusData:
    """The status of `key`, whose file a creation just found.

    Raises:
        StatusFileError: when it is corrupt or foreign, or was deleted since.
    """
    stored = load_status(status_dir, key)
    if stored is None:
        raise StatusFileError(f"the status file of {key!r} was deleted while it was added")
    return stored


def _conflict(item: TaskSpec, where: str, fields: set[str] | None = None) -> LineError:
    named = f" ({', '.join(sorted(fields))} differ)" if fields else ""
    hint = ""
    if fields and fields <= CRAWL_FIELDS:
        hint = "; `scrapeflow crawl` takes new crawl settings for a stored task"
    elif fields:
        hint = "; a task's request never changes: give this one another key"
    return LineError(
        item.path,
        item.line,
        f"task key {item.key!r} already has different params{named} (from {where}); line "
        f"skipped{hint}",
    )
