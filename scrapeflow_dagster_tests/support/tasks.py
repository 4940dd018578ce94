"""Tasks stored the way users store them (the engine's intake: status files, DuckDB spool), and
added as `tasks` partitions."""

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import dagster as dg

from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.tasks.adding import add_tasks
from scrapeflow_dagster.engine.tasks.intake import TaskSpec, build_task, read_task_file
from scrapeflow_dagster.lib.partitions import add_task_partitions

# `(key, url)`, or a record with `key`, `url` and other params.
TaskRows = Sequence[tuple[str, str] | Mapping[str, Any]]


def store_tasks(layout: DataLayout, rows: TaskRows) -> list[str]:
    """Store tasks through the engine's intake, in order; every row must be valid.

    Returns:
        The keys stored.
    """
    records = [row if isinstance(row, Mapping) else {"key": row[0], "url": row[1]} for row in rows]
    specs = [build_task(dict(record), Path("tests"), n) for n, record in enumerate(records)]
    assert all(isinstance(s, TaskSpec) for s in specs), specs
    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        report = add_tasks(layout, specs, ledger=ledger)
    assert not report.errors, report.errors
    return report.keys


def store_and_add(layout: DataLayout, instance: dg.DagsterInstance, rows: TaskRows) -> list[str]:
    """Store tasks as `store_tasks` does and add them as partitions, in order."""
    keys = store_tasks(layout, rows)
    add_task_partitions(instance, keys)
    return keys


def add_task_file(
    layout: DataLayout,
    lines: Iterable[str],
    *,
    header: str = "key,url",
    name: str = "tasks.csv",
) -> list[str]:
    """Write `lines` under `header` as a CSV task file in the data folder and add it the way
    `scrapeflow tasks add FILE` does (the task-file reader, then the intake).

    Returns:
        The keys added, in the file's order.
    """
    path = layout.root / name
    path.write_text(header + "\n" + "".join(f"{line}\n" for line in lines))
    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        return add_tasks(layout, read_task_file(path), ledger=ledger).keys
