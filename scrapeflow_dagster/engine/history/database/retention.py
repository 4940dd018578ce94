"""DuckDB's history kept for a number of days (`history_keep_days`): the step runs, changes
and spool files' names older than that pruned (`prune`) by the first run of each UTC day that
ends in the data folder, so a daily refresh of a million tasks keeps a bounded history.

A run claims the day by creating `.history-pruned.<YYYY-MM-DD>` in the data folder, create-only:
of the shards and runs ending that day one prunes, the others pay a failed `open`. The claim is
given back when DuckDB stayed locked (the next run tries again), and older days' files go.
"""

import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from scrapeflow_dagster.engine.history.database.connection import LedgerLockedError
from scrapeflow_dagster.engine.history.database.prune import PruneResult, prune_history

CLAIM_PREFIX = ".history-pruned."


@dataclass(frozen=True)
class DailyPrune:
    """What `prune_once_a_day` did: pruned (with what it deleted), or why not."""

    pruned: PruneResult | None
    reason: str


def prune_once_a_day(
    db_path: Path,
    claim_dir: Path,
    keep_days: float,
    *,
    now: datetime | None = None,
    lock_timeout_seconds: float = 30.0,
) -> DailyPrune:
    """Delete the history of `db_path` older than `keep_days` unless a run already did today.

    Args:
        db_path: the DuckDB file.
        claim_dir: where the day's claim is made (the data folder).
        keep_days: days of history kept (each task's current state is kept whatever its age);
            0 or less: nothing is pruned.
        now: the time (naive or aware UTC; default now).
        lock_timeout_seconds: how long to wait for DuckDB's writer lock.
    """
    if keep_days <= 0:
        return DailyPrune(None, "history_keep_days is 0: the history is kept")
    moment = (now or datetime.now(UTC)).replace(tzinfo=None)
    claim = claim_dir / f"{CLAIM_PREFIX}{moment.date().isoformat()}"
    claim_dir.mkdir(parents=True, exist_ok=True)
    try:
        os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        return DailyPrune(None, f"already pruned today ({claim.name})")
    for older in claim_dir.glob(f"{CLAIM_PREFIX}*"):
        if older != claim:
            older.unlink(missing_ok=True)
    try:
        result = prune_history(
            db_path,
            before=moment - timedelta(days=keep_days),
            lock_timeout_seconds=lock_timeout_seconds,
        )
    except LedgerLockedError as exc:
        claim.unlink(missing_ok=True)  # another run of the day tries again
        return DailyPrune(None, str(exc))
    return DailyPrune(result, f"history older than {keep_days:g} days pruned")
