"""VACUUM of the event log while a run deletes planned rows, so its later rows reuse their space;
ANALYZE as it grows (`GrowthAnalyze`).

A chain run on Postgres writes three planned rows per task (most of them as it goes on:
`planned_paced`) and deletes each as its partition's materialisation is stored
(`lean_writes.delete_superseded_planned`). Postgres reuses a deleted row's space only once a
VACUUM has seen it, and autovacuum looks at a table at most once a minute and only when a fifth
of it is dead: a home's first chain run of 5,000 tasks kept 4.8 KB per task, of which the heap
2.3 KB (the planned rows' space beside the materialisations'). Vacuumed while the run goes on,
the materialisations stored after each VACUUM go into the space the planned rows left: 3.7-3.8
KB per task, the heap 1.4 KB (measured on 2026-11-29; the run as long, within the machine's
noise). The indexes keep the planned rows' entries: a leaf page is freed only once every entry
on it is gone, and the rows of the failed partitions (kept: they say FAILED) stay spread over
all of them.

Each process counts the planned rows it deleted; when they reach `min_rows`
(`lean_writes.vacuum_after_deleted`, default 2,000), or `fraction` of the table when that is
more (so a table of millions of rows is not scanned every few thousand deletes), a thread of the
process runs `VACUUM (SKIP_LOCKED) event_logs` on a connection of its own: the writer never
waits, and a VACUUM already running (another process's, autovacuum's) is not waited for either.
VACUUM changes no row any read sees; it takes a lock that only VACUUM, DDL and `ANALYZE` contend
for.
"""

import logging
import threading
import time
from typing import Any

import sqlalchemy as db
from dagster._core.storage.event_log.schema import SqlEventLogStorageTable
from sqlalchemy.engine import Engine

from scrapeflow_dagster.storage.batches.write import MAX_EVENT_ID

logger = logging.getLogger(__name__)

DEFAULT_FRACTION = 0.05
_TABLE = SqlEventLogStorageTable.name


class DeletedRowsVacuum:
    """Start a background VACUUM of the event log once enough rows were deleted (the module)."""

    def __init__(self, engine: Engine, min_rows: int, fraction: float = DEFAULT_FRACTION) -> None:
        self._engine = engine
        self._min_rows = min_rows
        self._fraction = fraction
        self._lock = threading.Lock()
        self._deleted = 0
        self._threshold = min_rows
        self._thread: threading.Thread | None = None

    def deleted(self, rows: int) -> None:
        """Count `rows` deleted (committed); start a VACUUM when they reach the threshold and
        none of this process's is running."""
        with self._lock:
            self._deleted += max(rows, 0)
            if self._deleted < self._threshold or self._running():
                return
            self._deleted = 0
            self._thread = threading.Thread(
                target=self._vacuum, name="scrapeflow-event-log-vacuum", daemon=True
            )
            self._thread.start()

    def forget_after_fork(self) -> None:
        """In a forked child: the parent's thread is not here, nor are its counts."""
        self._lock = threading.Lock()
        self._deleted = 0
        self._thread = None

    def _running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _vacuum(self) -> None:
        started = time.perf_counter()
        try:
            # VACUUM refuses to run in a transaction: an AUTOCOMMIT connection of its own.
            with self._engine.connect() as conn:
                conn = conn.execution_options(isolation_level="AUTOCOMMIT")
                conn.execute(db.text(f"VACUUM (SKIP_LOCKED) {_TABLE}"))
                rows = conn.execute(
                    db.text("SELECT reltuples FROM pg_class WHERE oid = CAST(:t AS regclass)"),
                    {"t": _TABLE},
                ).scalar()
        except Exception as exc:  # space reused later, never a failed write
            logger.warning(
                "VACUUM of %s while writing failed (%s): left to autovacuum", _TABLE, exc
            )
            return
        self._threshold = _threshold(self._min_rows, self._fraction, rows)
        logger.debug(
            "VACUUM %s in %.2f s; next after %d deleted rows",
            _TABLE,
            time.perf_counter() - started,
            self._threshold,
        )


def _threshold(min_rows: int, fraction: float, table_rows: Any) -> int:
    # reltuples is -1 for a table never vacuumed nor analysed, an estimate otherwise.
    estimate = float(table_rows) if table_rows is not None else 0.0
    return max(min_rows, int(fraction * max(estimate, 0.0)))


class GrowthAnalyze:
    """ANALYZE the event log each time its newest id has doubled since this process last did.

    A run's planned rows written while it goes on are checked against the rows stored since
    the run began (`planned_behind.drop_superseded`). Postgres plans that check from the
    table's statistics, and autovacuum refreshes them at most once a minute: a home's first
    run grows the table tenfold within seconds, and on the statistics of an empty table the
    check scanned every row since the run began once per row of the chunk (13 s a chunk at
    10,000 tasks, the event log's insert lock held meanwhile). Doubling: a run of a million
    tasks analyses some twenty times, ~0.1 s each (a sample of the table, on a connection of
    its own). Not while a VACUUM holds the table (the run's own, `DeletedRowsVacuum`): then at
    the next chunk.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._lock = threading.Lock()
        self._analysed_upto = 0

    def refresh(self) -> None:
        """ANALYZE now when the newest id is at least twice what it was at the last one; never
        raises (the check runs on older statistics, as it would without this)."""
        try:
            with self._engine.connect() as conn:
                newest = int(conn.execute(MAX_EVENT_ID).scalar() or 0)
            if newest < 2 * self._analysed_upto or not self._analyse():
                return
        except Exception as exc:
            logger.warning("ANALYZE of %s while writing failed (%s)", _TABLE, exc)
            return
        with self._lock:
            self._analysed_upto = max(self._analysed_upto, newest, 1)

    def _analyse(self) -> bool:
        with self._engine.connect() as autocommit:
            conn = autocommit.execution_options(isolation_level="READ COMMITTED")
            try:
                with conn.begin():
                    # ANALYZE's own lock, not waited for: a VACUUM holds it for a while.
                    conn.execute(
                        db.text(f"LOCK TABLE {_TABLE} IN SHARE UPDATE EXCLUSIVE MODE NOWAIT")
                    )
                    conn.execute(db.text(f"ANALYZE {_TABLE}"))
            except db.exc.OperationalError as exc:
                if "could not obtain lock" not in str(exc):
                    raise
                return False  # at the next chunk
        return True

    def forget_after_fork(self) -> None:
        """In a forked child: a lock of its own."""
        self._lock = threading.Lock()
