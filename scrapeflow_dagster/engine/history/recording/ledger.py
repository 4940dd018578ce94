"""The `Ledger`: the writer runs use, which never opens DuckDB on the hot path.

A Ledger buffers rows in memory and writes them, every `batch_rows` rows and on `flush()`, to a
spool file (JSONL, written atomically); `sync()` hands the spool to `sync_spool`. While it is
open it keeps a marker file (`history.markers`) saying since when the status files may hold
results its spool does not yet: `scrapeflow status` reads only those files beside DuckDB.

    with Ledger(db_path, run_id=run_id) as ledger:
        ledger.record_task(TaskRow.from_params(key, params))
        ledger.record_step(StepRow(key, "scrape", "SUCCESS", ended_at=...))
    # leaving the block flushes and syncs (best effort); the spool keeps what could not be synced
"""

import itertools
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import duckdb

from scrapeflow_dagster.engine.history.markers.ledger_marker import LedgerMarker
from scrapeflow_dagster.engine.history.recording.rows import (
    FrontierRow,
    OutputColumnsRow,
    OutputRow,
    PageRow,
    StepRow,
    TaskRow,
)
from scrapeflow_dagster.engine.history.recording.spool import default_spool_dir, new_spool_name
from scrapeflow_dagster.engine.history.recording.spool_lines import (
    frontier_line,
    output_columns_line,
    output_line,
    page_line,
    step_line,
    task_line,
)
from scrapeflow_dagster.engine.history.recording.sync import SyncResult, sync_spool
from scrapeflow_dagster.engine.state.atomic import write_bytes_atomic

logger = logging.getLogger(__name__)


class Ledger:
    """Buffers task and step rows and spools them to disk; `sync` moves the spool into DuckDB.

    Safe to share between threads. Several processes may each have a Ledger on the same
    database and the same spool folder: spool names are unique and ingest is idempotent.
    Close it (or use it as a context manager): its marker stays until then.
    """

    def __init__(
        self,
        db_path: Path,
        *,
        spool_dir: Path | None = None,
        run_id: str | None = None,
        batch_rows: int = 5000,
        keep_marker: bool = True,
        journal: bool = False,
    ) -> None:
        """Create a ledger and its marker; nothing touches DuckDB until `sync`.

        Args:
            db_path: The DuckDB file (created by the first sync).
            spool_dir: Where spool files go; default `<db_path.parent>/ledger-spool/`.
            run_id: Recorded on step rows that carry no run id of their own.
            batch_rows: Rows buffered in memory before they are written to a spool file.
            keep_marker: False for a Ledger that records no step rows (tasks, frontier): no
                marker is written until a step row is (a file creation saved, ~1 ms on disk,
                and `scrapeflow status` meanwhile need not look for changed status files:
                task rows change no step's outcome, and new tasks show in the folder's count).
            journal: The caller names each status file in `announce` before writing it, so
                the marker lists the files its rows may lag behind (`history.markers`) and
                `scrapeflow status` reads those without a `stat` of every file. Without
                one, every status file changed since the marker's time is suspect.

        Raises:
            ValueError: when `batch_rows` is below 1.
            OSError: when the spool folder or the marker cannot be created.
        """
        if batch_rows < 1:
            raise ValueError(f"batch_rows must be >= 1, got {batch_rows}")
        self.db_path = Path(db_path)
        self.spool_dir = Path(spool_dir) if spool_dir is not None else default_spool_dir(db_path)
        self.run_id = run_id
        self.batch_rows = batch_rows
        self.spool_dir.mkdir(parents=True, exist_ok=True)
        # One growing bytearray, not a list of lines: orjson's small results each pin about a
        # page of memory, so 100,000 buffered lines would cost hundreds of MiB.
        self._buffer = bytearray()
        self._buffered_rows = 0
        self._seq = itertools.count()
        self._lock = threading.Lock()
        # Written before the first status file of a step can be, so a kill at any later moment
        # leaves it behind: status files written since its time are then read, not trusted to
        # DuckDB. (Made at the first step row instead, a kill between that step's status file
        # and its row would leave no trace.)
        self._marker = LedgerMarker(self.spool_dir, journal=journal)
        # Keys named in the journal whose step row has not been recorded yet: the marker stays
        # through `close` while there are any (a reader must still read their files).
        self._pending: dict[str, int] = {}
        self._batch_started = time.time()
        if keep_marker:
            self._marker.hold(self._batch_started)

    @property
    def buffered_rows(self) -> int:
        """Rows recorded but not yet written to a spool file."""
        return self._buffered_rows

    def record_task(self, row: TaskRow) -> None:
        """Buffer a task row; writes a spool file when the buffer reaches `batch_rows`.

        Raises:
            TypeError: when `row.params` holds a value JSON cannot represent.
            OSError: when a due spool file cannot be written (the rows stay buffered).
        """
        self._append(task_line, row)

    def record_step(self, row: StepRow) -> None:
        """Buffer a step row (message redacted); writes a spool file at `batch_rows` rows.

        Raises:
            OSError: when a due spool file cannot be written (the rows stay buffered).
        """
        self._append(step_line, row, step=True)
        if self._pending:
            with self._lock:
                left = self._pending.pop(row.key, 0) - 1
                if left > 0:
                    self._pending[row.key] = left

    def record_output(self, row: OutputRow) -> None:
        """Buffer a successful step's output for the `outputs` table (record its step row
        first); writes a spool file at `batch_rows`.

        Raises:
            OSError: when a due spool file cannot be written (the rows stay buffered).
        """
        self._append(output_line, row)

    def record_output_columns(self, row: OutputColumnsRow) -> None:
        """Buffer an executor's declared output shape for `output_columns`.

        Raises:
            OSError: when a due spool file cannot be written (the rows stay buffered).
        """
        self._append(output_columns_line, row)

    def record_page(self, row: PageRow) -> None:
        """Buffer a parsed page for the `pages` table; writes a spool file at `batch_rows`.

        Raises:
            OSError: when a due spool file cannot be written (the rows stay buffered).
        """
        self._append(page_line, row)

    def record_frontier(self, row: FrontierRow) -> None:
        """Buffer a discovered link for the `frontier` table; writes a spool file at `batch_rows`.

        Raises:
            OSError: when a due spool file cannot be written (the rows stay buffered).
        """
        self._append(frontier_line, row)

    def announce(self, *keys: str) -> None:
        """Say that the status files of `keys` are about to be written (a journaled Ledger:
        call it before each write of a file whose step row this Ledger will record; a
        Ledger without a journal ignores it).

        Raises:
            OSError: when the journal cannot be written: the status file must not be
                written then (`scrapeflow status` would not know to read it).
        """
        if not self._marker.journal:
            return
        with self._lock:
            if not self._marker.held:  # after `close`, or made without a marker
                self._marker.hold(self._batch_started)
            for key in keys:
                self._pending[key] = self._pending.get(key, 0) + 1
            try:
                self._marker.announce(keys)
            except OSError:
                # Taken by its time from now on (as a Ledger without a journal): slower to
                # read, still right. Raised only when even that cannot be written.
                logger.warning(
                    "ledger journal of %s not written: its marker is taken by time",
                    self._marker.path,
                    exc_info=True,
                )
                self._marker.drop_journal()

    def flush(self) -> Path | None:
        """Write the buffered rows to one new spool file, atomically.

        Returns:
            The spool file written, or None when nothing was buffered.

        Raises:
            OSError: when the file cannot be written; the rows stay buffered for a retry.
        """
        with self._lock:
            if not self._buffer:
                return None
            path = self.spool_dir / new_spool_name()
            next_batch = time.time()
            write_bytes_atomic(path, bytes(self._buffer))
            self._buffer.clear()
            self._buffered_rows = 0
            if self._marker.held:
                # The next batch may hold a row whose status file was written during this one
                # (recorded a moment after its write), hence this batch's start, not the flush;
                # its journal file stays listed for the same reason.
                self._rotate_marker(self._batch_started)
            self._batch_started = next_batch
        return path

    def sync(self, *, lock_timeout_seconds: float = 10.0) -> SyncResult:
        """Ingest every spool file into DuckDB (rows still buffered need `flush` first).

        See `sync_spool`; a held lock is reported in the result, never raised.
        """
        return sync_spool(self.db_path, self.spool_dir, lock_timeout_seconds=lock_timeout_seconds)

    def close(self, *, sync: bool = True, lock_timeout_seconds: float = 10.0) -> SyncResult | None:
        """Flush, then sync best effort: a DuckDB failure is logged and the spool kept.

        Args:
            sync: False leaves the rows in the spool for the next sync (a caller whose work
                ends in one, e.g. a crawl's run).

        Returns:
            The sync result, or None when the sync failed with a DuckDB error or `sync` is
            False.

        Raises:
            OSError: when the last spool file cannot be written (rows would be lost otherwise).
        """
        self.flush()
        with self._lock:
            # A thread may have recorded a row since the flush, or named a file whose row is
            # still to come: the marker then stays (its journal names that file).
            if not self._buffer and not self._pending:
                self._marker.release()
        if not sync:
            return None
        try:
            return self.sync(lock_timeout_seconds=lock_timeout_seconds)
        except duckdb.Error:
            logger.exception(
                "ledger sync into %s failed; spool kept in %s", self.db_path, self.spool_dir
            )
            return None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # Rows recorded before a failure are still worth keeping, so close on errors too.
        self.close()

    def _append(
        self, to_line: Callable[[Any, int, str | None], bytes], row: object, *, step: bool = False
    ) -> None:
        with self._lock:
            if step and not self._marker.held:  # after `close`, or made without a marker
                self._marker.hold(self._batch_started)
            self._buffer += to_line(row, next(self._seq), self.run_id)
            self._buffered_rows += 1
            full = self._buffered_rows >= self.batch_rows
        if full:
            self.flush()

    def _rotate_marker(self, since: float) -> None:
        # After a spool file was written: a failure leaves the older marker, which says more
        # files may lag than do (slower, still right), so it is logged rather than raised.
        try:
            self._marker.rotate(since)
        except OSError:
            logger.warning("ledger marker %s not updated", self._marker.path, exc_info=True)
