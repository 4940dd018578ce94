"""Exact counts of each status label per executor (`scrapeflow status`), from DuckDB, reading
only the status files DuckDB may lag behind.

The status files are the truth, but reading a million of them took 834 s. DuckDB's
`current_state` agrees with them for every task except:
- steps whose rows a live Ledger still buffers, or a killed one lost: the files its journal
  names (`open_markers`) are read instead, or, where any open-ledger marker keeps no journal
  or is dead, the files changed since the oldest marker's time;
- rows in spool files not yet ingested (DuckDB opened read-only: another process reads it) or
  set aside as unreadable: those tasks' files are read;
- tasks that could not start (missing or corrupt status file: the runner records an ERROR with
  0 attempts, and writes no file): their files are read;
- status files added or removed outside scrapeflow (DuckDB's `tasks` count differs from the
  folder's): files DuckDB does not know are read, rows of keys without a file left out.
What this cannot see: a status file edited by hand (or copied over another) in place;
`scrapeflow db rebuild` makes DuckDB agree again. A marker's time is compared with file
modification times, less `MARGIN_SECONDS` (coarse file-system clocks; keep the hosts of a
shared data folder's clocks within it).

Dead markers are repaired here when DuckDB is writable (`repair`), so DuckDB heals without a
rebuild; rows of files that a live run may also still record are left for a later call.
"""

import os
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import duckdb

from scrapeflow_dagster.engine.history.counting.status_folder import (
    FolderListing,
    list_status_folder,
    read_labels,
)
from scrapeflow_dagster.engine.history.counting.status_labels import (
    LABEL_PREFIX_SQL,
    WHITESPACE,
    finish_label,
)
from scrapeflow_dagster.engine.history.database.connection import (
    LedgerLockedError,
    connect_read_write,
    connect_readonly,
)
from scrapeflow_dagster.engine.history.from_status_files.repair import repair_dead_markers
from scrapeflow_dagster.engine.history.markers.names import open_dir
from scrapeflow_dagster.engine.history.markers.open_markers import (
    OpenMarker,
    read_markers,
    sweep_orphan_journals,
)
from scrapeflow_dagster.engine.history.recording.spool import (
    bad_spool_files,
    spool_files,
    step_keys,
)
from scrapeflow_dagster.engine.history.recording.sync import sync_spool_into
from scrapeflow_dagster.engine.state.atomic import sweep_stale_temp_files
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.schema import STATUS_SUFFIX, SUCCESS

# File modification times may trail the wall clock (ext4 stamps them from a clock ticking every
# few ms; FAT keeps 2 s; a network file system takes its server's clock).
MARGIN_SECONDS = 2.0
# A writer that held DuckDB beyond the caller's wait is asked no more: read-only, at once.
_READ_ONLY_WAIT_SECONDS = 0.5

_CURRENT_SQL = f"""
CREATE OR REPLACE TEMP TABLE status_now AS
SELECT key, executor, status, attempts, seq, {LABEL_PREFIX_SQL} AS label
FROM current_state
"""
# The runner's row for a task that could not start: its file is missing or corrupt.
_NOT_STARTED_SQL = "SELECT DISTINCT key FROM status_now WHERE status = 'ERROR' AND attempts = 0"


@dataclass(frozen=True, slots=True)
class StatusCounts:
    """Tasks per status label (`status_labels`) and executor, exact as of the call.

    Attributes:
        counts: Executor -> label -> tasks; executors in the order DuckDB first recorded them.
        stored_tasks: Status files in the folder (tasks, whether they ran or not).
        source: `duckdb` (and the files it may lag behind) or `status files` (every one).
        files_read: Status files read.
        repaired_step_rows: Step runs of killed runs recorded again into DuckDB.
        notes: What the caller should know (DuckDB busy, markers repaired...), one line each.
    """

    counts: dict[str, dict[str, int]]
    stored_tasks: int
    source: str
    files_read: int = 0
    repaired_step_rows: int = 0
    notes: tuple[str, ...] = ()

    @property
    def labels(self) -> list[str]:
        """Every label counted, `SUCCESS` first, then sorted."""
        found = {label for by_label in self.counts.values() for label in by_label}
        return sorted(found, key=lambda label: (label != SUCCESS, label))


@dataclass
class _Tally:
    counts: dict[str, Counter[str]] = field(default_factory=dict)

    def add(self, executor: str, label: str, tasks: int) -> None:
        self.counts.setdefault(executor, Counter())[label] += tasks

    def result(self) -> dict[str, dict[str, int]]:
        return {ex: dict(c) for ex, c in self.counts.items() if sum(c.values())}


def count_statuses(
    layout: DataLayout,
    *,
    lock_timeout_seconds: float = 2.0,
    margin_seconds: float = MARGIN_SECONDS,
    from_files: bool = False,
) -> StatusCounts:
    """Count each executor's last outcome per label over the status folder, exactly.

    Syncs the spool into DuckDB (best effort) and repairs what killed runs lost (see the
    module). When DuckDB can be read neither way, or `from_files`, every status file is read.

    Args:
        layout: The data folder.
        lock_timeout_seconds: How long to wait for another process to let go of DuckDB.
        margin_seconds: How far before a marker's time status files are read.
        from_files: Read every status file; DuckDB is not opened.

    Raises:
        OSError: when the status folder cannot be listed or a file cannot be read.
    """
    markers = read_markers(layout.spool_dir)  # before the sync: see `open_markers`
    # Asked once: a run dying later in this call is repaired by the next one, from its time
    # (its journal, read before it died, may lack what it wrote after).
    dead = {m.path: m.is_dead() for m in markers}
    if open_dir(layout.spool_dir).is_dir():
        sweep_stale_temp_files(open_dir(layout.spool_dir))
        sweep_orphan_journals(layout.spool_dir)
    notes: list[str] = []
    cutoff = min(m.since for m in markers) - margin_seconds if markers else None
    named = _journaled_keys(markers, dead)
    no_duckdb = not layout.db_path.exists() and not spool_files(layout.spool_dir)
    if from_files or no_duckdb:
        found = _from_files(layout.status_dir, list_status_folder(layout.status_dir), notes)
        if from_files or not found.stored_tasks:
            return found  # asked for, or a new data folder: nothing to say
        note = f"no DuckDB file at {layout.db_path}: counted from the status files"
        return replace(found, notes=(note, *found.notes))
    # The folder is listed (and stat'ed) meanwhile DuckDB syncs and finds the current state:
    # DuckDB lets go of the GIL, and a million stats take 2 s (3.3 s for both, not 3.7).
    with ThreadPoolExecutor(1, thread_name_prefix="status-folder") as pool:
        listed = pool.submit(
            list_status_folder, layout.status_dir, changed_since=cutoff, among=named
        )
        opened = _open(layout, lock_timeout_seconds, notes)
        if opened is None:
            return _from_files(layout.status_dir, listed.result(), notes)
        conn, writable = opened
        try:
            # Every core (a writer has one): the folder listing meanwhile waits on system calls
            # more than it computes (1 thread: 0.1-0.9 s slower at a million tasks). 1 GB where
            # a writer has 256 MB: this one large query spills there (+0.25 s).
            conn.execute(f"SET threads = {os.cpu_count() or 1}")
            conn.execute("SET memory_limit = '1GB'")
            conn.execute(_CURRENT_SQL, [WHITESPACE])
            return _from_duckdb(
                conn, writable, layout, markers, dead, listed.result(), margin_seconds, notes
            )
        finally:
            conn.close()


def _journaled_keys(markers: list[OpenMarker], dead: dict[Path, bool]) -> frozenset[str] | None:
    """The keys the journals of `markers` name when every marker is live, of this host and
    keeps one; else None (the files changed since the oldest marker's time are found by
    `stat`). Another host's journal is not trusted: its appends may sit in that host's
    cache while the status files it renamed reach a shared folder, and it cannot be told
    dead."""
    if not markers or any(m.keys is None or dead[m.path] or m.elsewhere for m in markers):
        return None
    return frozenset().union(*(m.keys for m in markers if m.keys is not None))


def _open(
    layout: DataLayout, lock_timeout_seconds: float, notes: list[str]
) -> tuple[duckdb.DuckDBPyConnection, bool] | None:
    """DuckDB read-write and synced, else read-only, else None (a note says why)."""
    try:
        conn = connect_read_write(layout.db_path, lock_timeout_seconds)
        if conn is not None:
            try:
                _quiet(conn)
                synced = sync_spool_into(conn, layout.spool_dir)
            except BaseException:
                conn.close()
                raise
            if synced.bad_files:
                notes.append(f"{len(synced.bad_files)} spool files set aside as unreadable")
            return conn, True
        conn = connect_readonly(layout.db_path, lock_timeout_seconds=_READ_ONLY_WAIT_SECONDS)
        _quiet(conn)
    except (LedgerLockedError, duckdb.Error) as exc:
        notes.append(f"DuckDB cannot be read ({exc}): counted from the status files")
        return None
    notes.append("DuckDB is open in another process: its spool not synced, those tasks read")
    return conn, False


def _quiet(conn: duckdb.DuckDBPyConnection) -> None:
    # DuckDB draws a progress bar on stdout for a query past 2 s: amid the table it corrupts.
    conn.execute("SET enable_progress_bar = false")


def _from_duckdb(
    conn: duckdb.DuckDBPyConnection,
    writable: bool,
    layout: DataLayout,
    markers: list[OpenMarker],
    dead: dict[Path, bool],
    listing: FolderListing,
    margin_seconds: float,
    notes: list[str],
) -> StatusCounts:
    """The counts of `status_now` (made already), less its suspect tasks, plus what their
    files say."""
    suspects = set(listing.changed)
    spooled = bad_spool_files(layout.spool_dir)
    if not writable:
        spooled += spool_files(layout.spool_dir)
    spooled_keys, bad_lines = step_keys(spooled)
    suspects |= spooled_keys
    if bad_lines:
        notes.append(f"{bad_lines} unreadable spool lines: run `scrapeflow db rebuild`")
    suspects |= {str(key) for (key,) in conn.execute(_NOT_STARTED_SQL).fetchall()}
    restrict = _count(conn, "SELECT count(*) FROM tasks") != listing.count
    if restrict:
        # Files added or removed outside scrapeflow (or tasks being added right now).
        _register_keys(conn, "status_files", listing.keys())
        unknown = conn.execute("SELECT key FROM status_files ANTI JOIN tasks USING (key)")
        suspects |= {str(key) for (key,) in unknown.fetchall()}
    repaired = (
        _repair(conn, layout, markers, dead, listing, margin_seconds, notes) if writable else 0
    )
    tally = _Tally()
    _add_duckdb_counts(conn, tally, suspects, restrict=restrict)
    read = read_labels(layout.status_dir, sorted(suspects))
    for by_executor in read.labels.values():
        for executor, label in by_executor.items():
            tally.add(executor, label, 1)
    if read.unreadable:
        notes.append(f"{_plural(len(read.unreadable), 'unreadable status file')} skipped")
    if markers:
        ledgers, changed = _plural(len(markers), "open ledger"), len(listing.changed)
        notes.append(f"{ledgers} (runs going on): {changed} status files changed since read")
    return StatusCounts(
        tally.result(),
        listing.count,
        "duckdb",
        files_read=len(read.labels) + len(read.unreadable),
        repaired_step_rows=repaired,
        notes=tuple(notes),
    )


def _add_duckdb_counts(
    conn: duckdb.DuckDBPyConnection, tally: _Tally, suspects: set[str], *, restrict: bool
) -> None:
    where = []
    if suspects:
        _register_keys(conn, "suspects", suspects)
        where.append("NOT EXISTS (SELECT 1 FROM suspects s WHERE s.key = n.key)")
    if restrict:
        where.append("EXISTS (SELECT 1 FROM status_files f WHERE f.key = n.key)")
    sql = (
        "SELECT executor, label, count(*), min(seq) AS first FROM status_now n"
        + (f" WHERE {' AND '.join(where)}" if where else "")
        + " GROUP BY executor, label ORDER BY first"
    )
    for executor, label, tasks, _ in conn.execute(sql).fetchall():
        tally.add(str(executor), finish_label(str(label)), int(tasks))


def _repair(
    conn: duckdb.DuckDBPyConnection,
    layout: DataLayout,
    markers: list[OpenMarker],
    dead: dict[Path, bool],
    listing: FolderListing,
    margin_seconds: float,
    notes: list[str],
) -> int:
    """`repair_dead_markers`, said in a note; returns the step runs appended."""
    found = repair_dead_markers(
        conn,
        layout.status_dir,
        markers,
        listing.changed,
        margin_seconds=margin_seconds,
        is_dead=dead,
    )
    if found is None:
        return 0
    killed, result = found
    notes.append(
        f"{_plural(killed, 'ledger')} of killed runs: "
        f"{_plural(result.files_read, 'status file')} read, "
        f"{_plural(result.step_rows_inserted, 'step run')} recorded again into DuckDB"
    )
    return result.step_rows_inserted


def _from_files(status_dir: Path, listing: FolderListing, notes: list[str]) -> StatusCounts:
    cut = len(STATUS_SUFFIX)
    read = read_labels(status_dir, sorted(name[:-cut] for name in listing.names))
    tally = _Tally()
    for by_executor in read.labels.values():
        for executor, label in by_executor.items():
            tally.add(executor, label, 1)
    if read.unreadable:
        notes.append(f"{_plural(len(read.unreadable), 'unreadable status file')} skipped")
    return StatusCounts(
        tally.result(),
        listing.count,
        "status files",
        files_read=len(read.labels) + len(read.unreadable),
        notes=tuple(notes),
    )


def _register_keys(conn: duckdb.DuckDBPyConnection, name: str, keys: Iterable[str]) -> None:
    # A list parameter: 0.04 s per 100,000 keys. (A pandas frame is faster for a million, but
    # importing pandas costs 0.2 s whatever the size.)
    conn.execute(
        f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT unnest(?::VARCHAR[]) AS key", [list(keys)]
    )


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _count(conn: duckdb.DuckDBPyConnection, sql: str) -> int:
    rows = conn.execute(sql).fetchall()  # all: DuckDB refuses new work on an unfinished result
    return int(rows[0][0]) if rows else 0
