"""Trimming the history DuckDB keeps for good: the step runs, the changes found and the spool
files' names that a refresh appends, deleted when older than a date; each task's current state
and its latest page, text, outputs and extractions stay.

`step_runs` grows by a row per step per refresh (three per task through the chain: ~1 billion
rows a year for a daily refresh of a million tasks), `changes` by a row per change found,
`ingested_spool_files` by a row per spool file. The deletes run in one transaction under
DuckDB's one-writer lock (a run's ingest waits for it, as for any writer); `step_current` is
marked as reflecting what is left, so the next writer does not rank the whole history again,
and a CHECKPOINT hands the freed blocks back to the file for the rows that come next (DuckDB
reuses them; the file does not shrink).
"""

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import duckdb

from scrapeflow_dagster.engine.history.database.connection import (
    LedgerLockedError,
    connect_read_write,
)
from scrapeflow_dagster.engine.history.database.current import ensure_current, mark_current
from scrapeflow_dagster.engine.history.database.schema import SCHEMA_SQL

# Each task's current row is kept whatever its age: `current_state` reads it.
_STEP_RUNS = """
FROM step_runs AS s
WHERE s.ended_at < $before
  AND NOT EXISTS (
    SELECT 1 FROM step_current AS c
    WHERE c.key = s.key AND c.executor = s.executor AND c.seq = s.seq)
"""
_CHANGES = "FROM changes WHERE detected_at < $before"
_SPOOL_FILES = "FROM ingested_spool_files WHERE ingested_at < $before"


@dataclass(frozen=True)
class PruneResult:
    """Rows deleted (or, in a dry run, that would be) per table."""

    step_runs: int
    changes: int
    spool_files: int
    dry_run: bool


def prune_history(
    db_path: Path, *, before: datetime, lock_timeout_seconds: float, dry_run: bool = False
) -> PruneResult:
    """Delete the history rows of `db_path` older than `before` (see the module).

    Args:
        db_path: the DuckDB file (nothing happens when there is none).
        before: rows that ended (`step_runs`), were found (`changes`) or ingested
            (`ingested_spool_files`) before this naive UTC time go.
        lock_timeout_seconds: how long to wait for another writer to let go.
        dry_run: count what would go, delete nothing.

    Raises:
        LedgerLockedError: another process held DuckDB for `lock_timeout_seconds`.
    """
    if not Path(db_path).exists():
        return PruneResult(0, 0, 0, dry_run)
    conn = connect_read_write(Path(db_path), lock_timeout_seconds)
    if conn is None:
        raise LedgerLockedError(f"{db_path} stayed locked for {lock_timeout_seconds:g} s")
    try:
        conn.execute(SCHEMA_SQL)
        ensure_current(conn)  # the rows it keeps are the current ones as of now
        counts = _prune(conn, before, dry_run=dry_run)
        if not dry_run:
            conn.execute("CHECKPOINT")
    finally:
        conn.close()
    return PruneResult(*counts, dry_run=dry_run)


def _prune(
    conn: duckdb.DuckDBPyConnection, before: datetime, *, dry_run: bool
) -> tuple[int, int, int]:
    params = {"before": before}
    verb = "SELECT count(*)" if dry_run else "DELETE"
    conn.execute("BEGIN TRANSACTION")
    try:
        counts = []
        for where in (_STEP_RUNS, _CHANGES, _SPOOL_FILES):
            found = conn.execute(f"{verb} {where}", params).fetchone()
            counts.append(int(found[0]) if found else 0)
        if not dry_run:
            mark_current(conn)
        conn.execute("ROLLBACK" if dry_run else "COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return counts[0], counts[1], counts[2]
