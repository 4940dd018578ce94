"""Helpers of the status-count tests: steps played as the runner plays them (status file first,
then the Ledger's row), a child process that keeps rows buffered, and the reference counts."""

import hashlib
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass

import orjson

from scrapeflow_dagster.engine.history import Ledger, StepRow, connect_readonly
from scrapeflow_dagster.engine.history.counting.status_labels import (
    LABEL_PREFIX_SQL,
    WHITESPACE,
    finish_label,
    value_label,
)
from scrapeflow_dagster.engine.state.files import load_status, write_status
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.schema import record_error, record_start, record_success
from scrapeflow_dagster.engine.state.schema import utc_now as now
from scrapeflow_dagster.engine.status import status_summary
from scrapeflow_dagster_tests.support.paths import REPO_ROOT


@dataclass(frozen=True)
class Step:
    """One step to play: `error_class` None for a success."""

    key: str
    executor: str = "scrape"
    error_class: str | None = None
    message: str = ""

    def to_json(self) -> list[str | None]:
        return [self.key, self.executor, self.error_class, self.message]


def play_step(layout: DataLayout, ledger: Ledger, step: Step) -> None:
    """Name the key in the Ledger's journal, write the step's outcome into its task's status
    file, then record its row (the runner's order: a step reaches the Ledger only once its
    status file holds it)."""
    status = load_status(layout.status_dir, step.key)
    assert status is not None, step.key
    started = now()
    record_start(status, step.executor, started)
    ended = now()
    if step.error_class is None:
        md5 = hashlib.md5(f"{step.key}{ended}".encode()).hexdigest()
        output = {"content": md5, "size": 100, "http_status": 200}
        record_success(status, step.executor, output, ended=ended, attempts=1)
    else:
        record_error(
            status,
            step.executor,
            error_class=step.error_class,
            message=step.message,
            kind="permanent",
            ended=ended,
            attempts=1,
        )
    ledger.announce(step.key)  # nothing where the Ledger keeps no journal
    write_status(layout.status_dir, step.key, status)
    ledger.record_step(
        StepRow(
            key=step.key,
            executor=step.executor,
            status="SUCCESS" if step.error_class is None else "ERROR",
            error_class=step.error_class,
            error_kind=None if step.error_class is None else "permanent",
            message=None if step.error_class is None else step.message,
            attempts=1,
            md5=md5 if step.error_class is None else None,
            started_at=started,
            ended_at=ended,
        )
    )


def reference(layout: DataLayout) -> dict[str, dict[str, int]]:
    """What every status file says: scrapeflow's `status_summary`, labelled as `scrapeflow
    status` labels (`status_labels.value_label`), zeros left out."""
    frame = status_summary(layout.status_dir)
    counts: dict[str, Counter[str]] = {}
    for executor in frame.columns:
        for value, tasks in frame[executor].items():
            if tasks:
                counts.setdefault(str(executor), Counter())[value_label(str(value))] += int(tasks)
    return {executor: dict(by_label) for executor, by_label in counts.items()}


def duckdb_alone(layout: DataLayout) -> dict[str, dict[str, int]]:
    """What DuckDB's `current_state` says on its own, labelled the same way."""
    sql = f"SELECT executor, {LABEL_PREFIX_SQL} AS label, count(*) FROM current_state GROUP BY ALL"
    with connect_readonly(layout.db_path) as conn:
        rows = conn.execute(sql, [WHITESPACE]).fetchall()
    counts: dict[str, Counter[str]] = {}
    for executor, label, tasks in rows:
        counts.setdefault(str(executor), Counter())[finish_label(str(label))] += int(tasks)
    return {executor: dict(by_label) for executor, by_label in counts.items()}


CHILD = "scrapeflow_dagster_tests.engine.history.status_child"


def start_child(
    layout: DataLayout, steps: list[Step], *, batch_rows: int, journal: bool = False
) -> subprocess.Popen:
    """A process that plays `steps` through its own Ledger (journaled as a run's, with
    `journal`), says `ready` and then waits (its unflushed rows buffered) until its stdin
    closes, when it closes its Ledger."""
    proc = subprocess.Popen(
        [sys.executable, "-m", CHILD, str(layout.root), str(batch_rows), str(int(journal))],
        cwd=REPO_ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(orjson.dumps([s.to_json() for s in steps]).decode() + "\n")
    proc.stdin.flush()
    line = proc.stdout.readline().split()
    assert line[:1] == ["ready"], line
    return proc
