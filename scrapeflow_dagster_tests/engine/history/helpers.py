"""Helpers of the history tests: step rows at known times, queries, spool listings."""

import subprocess
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from scrapeflow_dagster.engine.history import StepRow, connect_readonly
from scrapeflow_dagster.engine.history.markers.names import OPEN_DIR_NAME

T0 = datetime(2026, 11, 22, 14, 0, 0)
REPO_ROOT = Path(__file__).resolve().parents[3]


def step(key: str, minutes: int, status: str = "SUCCESS", **fields: Any) -> StepRow:
    """A scrape step row that started `minutes` after T0 and took two seconds."""
    return StepRow(
        key=key,
        executor="scrape",
        status=status,
        started_at=T0 + timedelta(minutes=minutes),
        ended_at=T0 + timedelta(minutes=minutes, seconds=2),
        **fields,
    )


def query(db_path: Path, sql: str) -> list[tuple[Any, ...]]:
    """All rows of `sql` on the ledger, read-only."""
    with connect_readonly(db_path) as conn:
        return conn.execute(sql).fetchall()


def spool_files(spool_dir: Path) -> list[Path]:
    """The spool files waiting in `spool_dir`, in name order."""
    return sorted(spool_dir.glob("*.jsonl"))


def spool_entries(spool_dir: Path) -> list[Path]:
    """Everything in `spool_dir` but the folder of open ledgers' markers (`open_markers`)."""
    return [p for p in spool_dir.iterdir() if p.name != OPEN_DIR_NAME]


def release(proc: subprocess.Popen[str]) -> None:
    """Let a `hold_database` holder close the database and exit."""
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
