"""Ingest of the spool into DuckDB, by whichever process gets DuckDB's single write lock.

Ingest is idempotent per spool file: a batch inserts its rows and records its file names in
`ingested_spool_files` in one transaction, and only then deletes the files. A crash at any
moment therefore loses or doubles no row; a file DuckDB cannot read is set aside, not retried.
"""

import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import duckdb
import orjson

from scrapeflow_dagster.engine.history.database import schema
from scrapeflow_dagster.engine.history.database import spool_sql as sql
from scrapeflow_dagster.engine.history.database.connection import connect_read_write
from scrapeflow_dagster.engine.history.database.current import ensure_current, refresh_current
from scrapeflow_dagster.engine.history.recording import render_choices
from scrapeflow_dagster.engine.history.recording.spool import (
    default_spool_dir,
    quarantine,
    spool_files,
)
from scrapeflow_dagster.engine.state.schema import utc_now

_T = TypeVar("_T")

# Names of the temp files `joined_spool` writes in the spool folder (dot-files: not spool files).
JOINED_PREFIX = ".joined-"

# Spool files per DuckDB transaction: large enough to amortise the commit, small enough that a
# sync holding the lock lets a waiting process in within seconds.
FILES_PER_TRANSACTION = 64

# DuckDB's memory cap while it ingests (the connection's own cap comes back after). DuckDB fills
# its cap with cached table data as one sync goes on, so a process that syncs a whole run's
# spool grew with the spool: at 300,000 tasks' rows 297-344 MiB under the writer's 256 MB cap,
# 163 MiB under this one, flat in the spool's size and in the table's (0 to 1M tasks), the same
# rows and no slower (measured 2026-11-28). A batch this cap cannot hold (rows of unusual
# size) is ingested again under the connection's own cap.
INGEST_MEMORY_LIMIT = "64MB"

# What DuckDB raises for malformed JSON, a value of the wrong type, or a row missing a required
# field; anything else (I/O, out of memory) is the environment and is raised.
_BAD_SPOOL_DATA = (
    duckdb.InvalidInputException,
    duckdb.ConversionException,
    duckdb.ConstraintException,
)


@dataclass(frozen=True, slots=True)
class SyncResult:
    """What one `sync` did.

    Attributes:
        ingested_rows: Rows (tasks and step runs) read from spool files into DuckDB.
        pending_files: Spool files still waiting after this sync.
        locked: True when another process held the database and nothing was ingested.
        ingested_files: Spool files ingested and deleted.
        bad_files: Spool files DuckDB could not read, renamed to `*.jsonl.bad`.
    """

    ingested_rows: int
    pending_files: int
    locked: bool = False
    ingested_files: int = 0
    bad_files: tuple[Path, ...] = ()


def sync_spool(
    db_path: Path, spool_dir: Path | None = None, *, lock_timeout_seconds: float = 10.0
) -> SyncResult:
    """Ingest every spool file in `spool_dir` into DuckDB, one transaction per batch of files.

    Opens `db_path` read-write, retrying with backoff while another process holds it. Each
    batch inserts its rows and records its file names in `ingested_spool_files` in one
    transaction, then deletes the files; a file whose name is already recorded (a crash between
    commit and delete) is only deleted. A file DuckDB cannot parse is renamed `*.jsonl.bad`.

    Args:
        db_path: The DuckDB file; created with the schema when missing.
        spool_dir: The spool folder; default `<db_path.parent>/ledger-spool/`.
        lock_timeout_seconds: How long to wait for another process to release the file.

    Returns:
        The counts; `locked=True` (and the spool untouched) when the lock never came.

    Raises:
        duckdb.Error: for a broken database (not for a lock held by another process).
    """
    spool_dir = Path(spool_dir) if spool_dir is not None else default_spool_dir(db_path)
    conn = connect_read_write(Path(db_path), lock_timeout_seconds)
    if conn is None:
        return SyncResult(ingested_rows=0, pending_files=len(spool_files(spool_dir)), locked=True)
    try:
        return sync_spool_into(conn, spool_dir)
    finally:
        conn.close()


def sync_spool_into(conn: duckdb.DuckDBPyConnection, spool_dir: Path) -> SyncResult:
    """`sync_spool` on a connection the caller opened read-write (and closes), for a caller
    that goes on to use it (`status_counts`): the schema is made, the spool ingested.

    Raises:
        duckdb.Error: for a broken database.
    """
    conn.execute(schema.SCHEMA_SQL)
    ensure_current(conn)
    remove_joined_leftovers(spool_dir)
    with _ingest_memory(conn) as ingest_batch:
        rows, files, bad = _ingest_spool_files(conn, spool_files(spool_dir), ingest_batch)
    render_choices.publish_best_effort(conn, changed=files > 0)
    return SyncResult(
        ingested_rows=rows,
        pending_files=len(spool_files(spool_dir)),
        ingested_files=files,
        bad_files=tuple(bad),
    )


def in_transaction(conn: duckdb.DuckDBPyConnection, work: Callable[[], _T]) -> _T:
    """Run `work` in one transaction, then drop the temp table `spool` whatever happened.

    Raises:
        BaseException: whatever `work` or the COMMIT raised, after the rollback.
    """
    conn.execute("BEGIN TRANSACTION")
    try:
        result = work()
        conn.execute("COMMIT")
    except BaseException:
        try:
            conn.execute("ROLLBACK")
        except duckdb.Error:
            pass  # A failed COMMIT has already ended the transaction.
        raise
    finally:
        conn.execute(sql.DROP_SPOOL_SQL)
    return result


def load_spool(conn: duckdb.DuckDBPyConnection, paths: Sequence[Path]) -> int:
    """Fill the temp table `spool` from spool files and return its row count.

    Several files are read as one (`joined_spool`): DuckDB's JSON reader costs about 2 ms per
    file, and a crawl's run leaves dozens of small ones (a discovery writes its own).

    Raises:
        duckdb.InvalidInputException: and the other `_BAD_SPOOL_DATA` errors for bad content.
    """
    try:
        joined = joined_spool(paths) if len(paths) > 1 else None
    except (OSError, orjson.JSONEncodeError):  # unreadable, or a path that is not UTF-8
        joined = None  # DuckDB reads them and says what is wrong, as it does for one file
    try:
        if joined is None:
            conn.execute(sql.LOAD_SPOOL_SQL, [[str(p) for p in paths]])
        else:
            conn.execute(sql.LOAD_JOINED_SPOOL_SQL, [str(joined)])
        return count(conn.execute(sql.COUNT_SPOOL_SQL))
    finally:
        if joined is not None:
            joined.unlink(missing_ok=True)


def joined_spool(paths: Sequence[Path]) -> Path:
    """One temp file (a dot-file beside the first, which no sync lists) holding the lines of
    `paths` in order, each object given its file's path as `filename`, as DuckDB's
    `filename = true` would; a line that is not an object is kept as it is (DuckDB refuses
    it, and the files are then read one by one).

    Written file by file: memory holds one spool file's lines (at most a Ledger's `batch_rows`),
    not a batch's (up to `FILES_PER_TRANSACTION` files), twice over as the joined bytes were.

    Raises:
        OSError: when a file cannot be read or the joined file written.
    """
    joined = paths[0].with_name(f"{JOINED_PREFIX}{uuid.uuid4().hex}{paths[0].suffix}")
    try:
        with open(joined, "wb") as out:
            for path in paths:
                field = b'{"filename":' + orjson.dumps(str(path))
                lines = []
                for line in path.read_bytes().splitlines():
                    line = line.strip()
                    if line.startswith(b"{"):
                        rest = line[1:].lstrip()
                        line = field + (b"," if not rest.startswith(b"}") else b"") + rest
                    if line:
                        lines.append(line + b"\n")
                out.writelines(lines)
    except BaseException:
        joined.unlink(missing_ok=True)
        raise
    return joined


def remove_joined_leftovers(spool_dir: Path) -> None:
    """Delete joined files a sync killed before it removed them left in `spool_dir` (call it
    holding DuckDB's write lock: no other sync is reading one then)."""
    for leftover in spool_dir.glob(f"{JOINED_PREFIX}*"):
        leftover.unlink(missing_ok=True)


def count(result: duckdb.DuckDBPyConnection) -> int:
    """The single number a `SELECT count(*)` or `INSERT` statement returned (0 for none)."""
    row = result.fetchone()
    return int(row[0]) if row else 0


class _SpoolReadError(Exception):
    """A spool file's content is unusable (as opposed to the database failing)."""


def _ingest_batch(conn: duckdb.DuckDBPyConnection, paths: Sequence[Path]) -> int:
    def work() -> int:
        rows = load_spool(conn, paths)
        conn.execute(sql.INSERT_STEPS_SQL)
        refresh_current(conn)
        conn.execute(sql.UPSERT_TASKS_SQL)
        conn.execute(sql.UPSERT_OUTPUTS_SQL)
        conn.execute(sql.DELETE_FAILED_OUTPUTS_SQL)
        conn.execute(sql.UPSERT_EXTRACTED_SQL)
        conn.execute(sql.DELETE_STALE_EXTRACTED_SQL)
        conn.execute(sql.UPSERT_PAGES_SQL)
        conn.execute(sql.UPSERT_OUTPUT_COLUMNS_SQL)
        conn.execute(sql.UPSERT_PAGE_TEXT_SQL)
        conn.execute(sql.DELETE_STALE_PAGE_TEXT_SQL)
        conn.execute(sql.UPSERT_MAIN_CONTENT_SQL)
        conn.execute(sql.DELETE_STALE_MAIN_CONTENT_SQL)
        conn.execute(sql.INSERT_CHANGES_SQL)
        conn.execute(sql.INSERT_FRONTIER_SQL)
        render_choices.ingest(conn)
        conn.execute(sql.MARK_INGESTED_SQL, [[p.name for p in paths], utc_now()])
        return rows

    try:
        rows = in_transaction(conn, work)
    except _BAD_SPOOL_DATA as exc:
        raise _SpoolReadError(str(exc)) from exc
    # Only after the commit: a crash before this line leaves files the next sync just deletes.
    for path in paths:
        path.unlink(missing_ok=True)
    return rows


def _drop_already_ingested(conn: duckdb.DuckDBPyConnection, paths: Sequence[Path]) -> list[Path]:
    names = [p.name for p in paths]
    done = {name for (name,) in conn.execute(sql.ALREADY_INGESTED_SQL, [names]).fetchall()}
    for path in paths:
        if path.name in done:
            path.unlink(missing_ok=True)
    return [p for p in paths if p.name not in done]


IngestBatch = Callable[[duckdb.DuckDBPyConnection, Sequence[Path]], int]


@contextmanager
def _ingest_memory(conn: duckdb.DuckDBPyConnection) -> Iterator[IngestBatch]:
    """`INGEST_MEMORY_LIMIT` on `conn` while the block runs, and what ingests a batch under
    it: a batch DuckDB runs out of memory for is ingested again under the connection's own
    cap. The connection's cap is back when the block ends (as DuckDB shows it: to a tenth of
    a MiB)."""
    setting = conn.execute("SELECT current_setting('memory_limit')").fetchone()
    own = str(setting[0]) if setting else "256MB"
    conn.execute(f"SET memory_limit = '{INGEST_MEMORY_LIMIT}'")

    def ingest_batch(conn: duckdb.DuckDBPyConnection, paths: Sequence[Path]) -> int:
        try:
            return _ingest_batch(conn, paths)
        except duckdb.OutOfMemoryException:  # rolled back: nothing of it was stored
            conn.execute(f"SET memory_limit = '{own}'")
            try:
                return _ingest_batch(conn, paths)
            finally:
                conn.execute(f"SET memory_limit = '{INGEST_MEMORY_LIMIT}'")

    try:
        yield ingest_batch
    finally:
        conn.execute(f"SET memory_limit = '{own}'")


def _ingest_spool_files(
    conn: duckdb.DuckDBPyConnection, paths: Sequence[Path], ingest_batch: IngestBatch
) -> tuple[int, int, list[Path]]:
    rows = files = 0
    bad: list[Path] = []
    for start in range(0, len(paths), FILES_PER_TRANSACTION):
        batch = _drop_already_ingested(conn, paths[start : start + FILES_PER_TRANSACTION])
        if not batch:
            continue
        try:
            rows += ingest_batch(conn, batch)
            files += len(batch)
            continue
        except _SpoolReadError:
            pass
        # One unreadable file must not hold back the others: retry the batch file by file.
        for path in batch:
            try:
                rows += ingest_batch(conn, [path])
                files += 1
            except _SpoolReadError as exc:
                moved = quarantine(path, exc)
                bad.extend([moved] if moved else [])
    return rows, files, bad
