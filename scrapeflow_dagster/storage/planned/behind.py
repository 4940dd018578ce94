"""A run's planned rows past the first chunk per asset, written while the run goes on.

Dagster starts a run only once its planned events are stored (`planned`: one event per asset,
written as one row per partition). At 1,000,000 tasks those 3 million rows took 125 s of the
153 s between `dagster asset materialize` and the first request (measured 2026-11-28). So the
batched storages write the first `lean_writes.planned_rows_before_run` rows of each asset before
the run starts, and a thread of the process that created the run writes the rest, a chunk per
transaction, while the run goes on.

What every reader sees stays what stock Dagster's order gives. A planned row counts only while
it is the newest planned-or-materialisation row of its partition, and any such row stored since
the run's planning began (a materialisation by this run, a partition `release_not_attempted`
gave back to missing, another run's plan or materialisation) would on a stock home have come
after this run's planned row, and so supersedes it. A chunk therefore deletes, in the
transaction that inserts it, its rows whose partition has such a row (`drop_superseded`): the
insert holds SQLite's write lock (on Postgres, the event log's insert lock every batched writer
takes: `postgres_write`), so no other process's row can come between the check and the insert.
On Postgres the chunks are also paced to the run's progress (`planned_paced`). Where
materialisations delete the planned rows they supersede
(`lean_writes.delete_superseded_planned`), one stored before its partition's chunk found no
planned row of this run there and so left the partition's older planned row (another run's, kept
as that asset's newest when it was materialised); the chunk deletes it too, as that
materialisation would have (else the UI showed the older run as the partition's latest).

The thread is not a daemon: a process that created a run (a webserver, the daemon, a
`scrapeflow` command) ends only once the run's planned rows are written. Where the run executes
in that process (`dagster asset materialize`), the run's end waits for them (`wait`), so a
failed run's partitions end FAILED as on a stock home. Left as they are: until the thread is
done, the run's later partitions show missing where a stock home shows them in progress; a
process killed before it is done leaves them missing (not FAILED when the run fails).
"""

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence

import sqlalchemy as db
from dagster._core.events.log import EventLogEntry
from sqlalchemy.engine import Connection

from scrapeflow_dagster.storage.batches.write import MATERIALIZATION_TYPE, PLANNED_TYPE
from scrapeflow_dagster.storage.planned.freed_memory import give_back_freed_memory
from scrapeflow_dagster.storage.planned.rows import Row

logger = logging.getLogger(__name__)

Chunk = tuple[list[EventLogEntry], list[Row]]
WriteChunk = Callable[[list[EventLogEntry], list[Row]], None]

# A chunk waits this long in all for SQLite's write lock (a shard's batch holds it for
# fractions of a second; Dagster's own SQLite timeout is shorter).
_LOCKED_RETRY_SECONDS = 60.0
# Rows per transaction behind the run's start, and the pause after each, as long as it took:
# every transaction of the process holds the storage's lock (Dagster's `_db_lock`), which a
# thread writing chunk after chunk kept from the run's own start (13 s at 100,000 tasks with
# chunks of 10,000 and no pause).
BEHIND_CHUNK_ROWS = 2_000

# The chunk's rows (ids `:first` to `:last`) whose partition got a materialisation or a planned
# row after `:since` (the run's first chunk) and before the chunk.
_DROP_SUPERSEDED = db.text(
    f"""
DELETE FROM event_logs
WHERE id BETWEEN :first AND :last
  AND EXISTS (
    SELECT 1 FROM event_logs AS later
    WHERE later.asset_key = event_logs.asset_key
      AND later.dagster_event_type IN ('{MATERIALIZATION_TYPE}', '{PLANNED_TYPE}')
      AND later.partition = event_logs.partition
      AND later.id > :since AND later.id < :first)
"""
)


# The planned rows older than `:since` (before the run's planning) of the partitions of the
# chunk's rows (`:first` to `:last`, one asset) that got a materialisation after `:since` and
# before the chunk: those that materialisation deletes where the run's planned row came first
# (`lean_writes._DELETE_SUPERSEDED_PLANNED`: its own run's row is then the partition's newest,
# so every older one goes). None of them is the asset's newest planned row, which is this
# run's since its first chunk. CROSS JOIN: SQLite then loops over the chunk's rows by id and
# looks the older rows up by partition (a plain JOIN scanned every older planned row).
_DROP_OLDER_SUPERSEDED = db.text(
    f"""
DELETE FROM event_logs
WHERE id IN (
  SELECT older.id
  FROM event_logs AS mine
  CROSS JOIN event_logs AS older
    ON older.asset_key = mine.asset_key
   AND older.dagster_event_type = '{PLANNED_TYPE}'
   AND older.partition = mine.partition
   AND older.id < :since
  WHERE mine.id BETWEEN :first AND :last
    AND EXISTS (
      SELECT 1 FROM event_logs AS later
      WHERE later.asset_key = mine.asset_key
        AND later.dagster_event_type = '{MATERIALIZATION_TYPE}'
        AND later.partition = mine.partition
        AND later.id > :since AND later.id < :first))
"""
)

# The same two on Postgres, written so that its planner loops over the chunk's rows and looks
# each partition up in the `(asset_key, dagster_event_type, partition, id)` index: a scalar
# subquery with LIMIT and a LATERAL one with OFFSET 0 are not turned into joins. As joins it
# hashed every row since `:since` for each chunk (the run's whole log by its end), or, on
# statistics from a smaller table, scanned them once per row of the chunk (13 s a chunk).
_LATER_ROW_PG = """(
    SELECT later.id FROM event_logs AS later
    WHERE later.asset_key = mine.asset_key
      AND later.dagster_event_type IN ({kinds})
      AND later.partition = mine.partition
      AND later.id > :since AND later.id < :first
    LIMIT 1) IS NOT NULL"""
_DROP_SUPERSEDED_PG = db.text(
    f"""
DELETE FROM event_logs AS mine
WHERE mine.id BETWEEN :first AND :last
  AND {_LATER_ROW_PG.format(kinds=f"'{MATERIALIZATION_TYPE}', '{PLANNED_TYPE}'")}
"""
)
_DROP_OLDER_SUPERSEDED_PG = db.text(
    f"""
DELETE FROM event_logs
WHERE id IN (
  SELECT older.id
  FROM event_logs AS mine
  CROSS JOIN LATERAL (
    SELECT o.id FROM event_logs AS o
    WHERE o.asset_key = mine.asset_key
      AND o.dagster_event_type = '{PLANNED_TYPE}'
      AND o.partition = mine.partition
      AND o.id < :since
    OFFSET 0) AS older
  WHERE mine.id BETWEEN :first AND :last
    AND {_LATER_ROW_PG.format(kinds=f"'{MATERIALIZATION_TYPE}'")})
"""
)
_DROPS = {
    "sqlite": (_DROP_OLDER_SUPERSEDED, _DROP_SUPERSEDED),
    "postgresql": (_DROP_OLDER_SUPERSEDED_PG, _DROP_SUPERSEDED_PG),
}


def drop_superseded(
    conn: Connection, event_ids: Sequence[int], since: int, *, older_too: bool
) -> int:
    """Delete the planned rows just inserted under `event_ids` (consecutive, in the
    transaction that inserted them) whose partition has a materialisation or planned row newer
    than `since`; with `older_too` (materialisations delete the planned rows they supersede),
    also the older planned rows such a materialisation supersedes (see the module). Returns
    the rows deleted."""
    if not event_ids:
        return 0
    params = {"first": event_ids[0], "last": event_ids[-1], "since": since}
    drop_older, drop = _DROPS[conn.dialect.name]
    deleted = 0
    if older_too:  # first: it finds the partitions by the chunk's rows, which the next drops
        deleted += conn.execute(drop_older, params).rowcount
    deleted += conn.execute(drop, params).rowcount
    return deleted


class PlannedBehind:
    """The threads of one storage writing runs' remaining planned rows (one per asset)."""

    def __init__(self) -> None:
        self._threads: dict[str, list[threading.Thread]] = {}
        self._finish: dict[str, tuple[threading.Event, threading.Event]] = {}
        self._lock = threading.Lock()

    def start(self, run_id: str, chunks: Iterator[Chunk], write: WriteChunk) -> None:
        """Write `chunks` of `run_id`'s planned rows with `write` in a thread."""
        self._start(run_id, _write_all, (run_id, chunks, write))

    def start_paced(
        self, run_id: str, write: Callable[[threading.Event, threading.Event], object]
    ) -> None:
        """Run `write` (`planned_paced`) in a thread, given the events that tell it to write
        what is left at once (set by `wait`) and to write nothing more (set by `discard`)."""
        with self._lock:
            events = self._finish.setdefault(run_id, (threading.Event(), threading.Event()))
        self._start(run_id, write, events)

    def _start(self, run_id: str, target: Callable[..., object], args: tuple[object, ...]) -> None:
        thread = threading.Thread(
            target=target,
            args=args,
            name=f"scrapeflow-planned-{run_id[:8]}",
            daemon=False,  # see the module: the process waits for it
        )
        with self._lock:
            self._threads.setdefault(run_id, []).append(thread)
        thread.start()

    def wait(self, run_id: str | None = None, *, discard: bool = False) -> None:
        """Until the rows of `run_id` (None: of every run) are written or given up; paced
        writers write what is left at once, or with `discard` nothing more."""
        with self._lock:
            if run_id is None:
                waiting = [t for threads in self._threads.values() for t in threads]
                finishing = list(self._finish.values())
                self._threads.clear()
                self._finish.clear()
            else:
                waiting = self._threads.pop(run_id, [])
                finishing = [self._finish.pop(run_id)] if run_id in self._finish else []
        for finish, stop in finishing:
            if discard:
                stop.set()
            finish.set()
        for thread in waiting:
            if thread is not threading.current_thread():
                thread.join()

    def discard(self, run_id: str) -> None:
        """The run's events are being deleted: its paced writers stop writing (the unpaced
        ones, a run's first seconds, are waited for)."""
        self.wait(run_id, discard=True)

    def forget(self) -> None:
        """In a forked child: its parent's threads are not there."""
        self._threads = {}
        self._finish = {}
        self._lock = threading.Lock()


def _write_all(run_id: str, chunks: Iterator[Chunk], write: WriteChunk) -> None:
    written = 0
    try:
        for events, rows in chunks:
            started = time.monotonic()
            _write_waiting_for_lock(write, events, rows)
            written += len(rows)
            time.sleep(time.monotonic() - started)  # the process's other writes go first
    except Exception:
        logger.exception(
            "run %s: %d planned rows written behind its start, the others could not be (its"
            " partitions without one show missing, not in progress or failed)",
            run_id,
            written,
        )
    else:
        logger.debug("run %s: %d planned rows written behind its start", run_id, written)
    finally:
        give_back_freed_memory()  # the chunks' rows, built and dropped one after another


def _write_waiting_for_lock(
    write: WriteChunk, events: list[EventLogEntry], rows: list[Row]
) -> None:
    deadline = time.monotonic() + _LOCKED_RETRY_SECONDS
    delay = 0.05
    while True:
        try:
            write(events, rows)
            return
        except db.exc.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(delay)
        delay = min(2 * delay, 1.0)
