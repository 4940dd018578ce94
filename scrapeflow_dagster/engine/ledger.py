"""The DuckDB record of tasks and step runs, built around DuckDB's one-writer-process rule.

DuckDB lets one process open a database file read-write, and none while another process holds
it (even read-only). So writers never open DuckDB on the hot path: a `Ledger` buffers rows in
memory and writes them, every `batch_rows` rows and on `flush()`, to a spool file (JSONL,
written atomically). `sync()` moves spool files into DuckDB when it can get the lock, and when it
cannot (another run syncing, a user with the file open) it says so and leaves the spool for the
next sync. Ingest is idempotent per spool file, so a crash at any moment loses or doubles no row.

    with Ledger(db_path, run_id=run_id) as ledger:
        ledger.record_task(TaskRow.from_params(key, params))
        ledger.record_step(StepRow(key, "scrape", "SUCCESS", ended_at=...))
    # leaving the block flushes and syncs (best effort); the spool keeps what could not be synced

`rebuild_from_status_dir` reconciles DuckDB with the status files, which stay the truth.
"""

import itertools
import logging
import os
import random
import re
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, NamedTuple, Self, TypeVar
from urllib.parse import urlsplit

import duckdb
import orjson

from scrapeflow_dagster.engine import ledger_schema as sql
from scrapeflow_dagster.engine.atomic import write_bytes_atomic
from scrapeflow_dagster.engine.errors import StatusFileError
from scrapeflow_dagster.engine.redact import proxy_host, redact

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

SPOOL_DIR_NAME = "ledger-spool"
SPOOL_SUFFIX = ".jsonl"
# A spool file that DuckDB cannot read is renamed with this suffix, out of the next sync's way.
BAD_SPOOL_SUFFIX = ".bad"
# Spool files per DuckDB transaction: large enough to amortise the commit, small enough that a
# sync holding the lock lets a waiting process in within seconds.
FILES_PER_TRANSACTION = 64
_WRITER_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "threads": 1,
    "memory_limit": "256MB",
}
STEP_STATUSES = frozenset({"SUCCESS", "ERROR", "SKIPPED"})
STATUS_FILE_SUFFIX = ".status.json"

_MAX_BACKOFF_SECONDS = 0.5
_HTTP_STATUS_IN_MESSAGE = re.compile(r"HTTP response (\d{3})")


def utc_now() -> datetime:
    """The current time as a naive UTC datetime, the convention of status files and DuckDB."""
    return datetime.now(UTC).replace(tzinfo=None)


@dataclass(frozen=True, slots=True)
class TaskRow:
    """One task as recorded in `tasks` (upserted on `key`; newer params win)."""

    key: str
    url: str
    method: str = "GET"
    params: dict[str, Any] = field(default_factory=dict)
    added_at: datetime = field(default_factory=utc_now)

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not isinstance(self.url, str):
            raise TypeError(f"task key and url must be str, got {self.key!r}, {self.url!r}")

    @classmethod
    def from_params(
        cls, key: str, params: dict[str, Any], *, added_at: datetime | None = None
    ) -> Self:
        """Build the row from scrapeflow task params: POST when they carry `post_payload`.

        Raises:
            ValueError: when `params` has no string `url`.
        """
        url = params.get("url")
        if not isinstance(url, str):
            raise ValueError(f"task {key!r}: params have no string 'url'")
        method = "POST" if params.get("post_payload") is not None else "GET"
        return cls(key, url, method, params, added_at if added_at is not None else utc_now())


@dataclass(frozen=True, slots=True)
class StepRow:
    """One run of one executor on one task, appended to `step_runs`.

    `ended_at` must be the value the executor writes as `<exec>_last_run` in the status file,
    so that `rebuild_from_status_dir` sees the two agree. A `run_id` of None takes the Ledger's.
    """

    key: str
    executor: str
    status: str  # 'SUCCESS' | 'ERROR' | 'SKIPPED'
    error_class: str | None = None
    error_kind: str | None = None
    message: str | None = None
    attempts: int | None = None
    http_status: int | None = None
    size: int | None = None
    md5: str | None = None
    proxy_host: str | None = None
    domain: str | None = None
    run_id: str | None = None
    started_at: datetime | None = None
    ended_at: datetime = field(default_factory=utc_now)

    def __post_init__(self) -> None:
        # Checked here, where the caller can see it, rather than as a spool file DuckDB rejects.
        if not isinstance(self.key, str) or not isinstance(self.executor, str):
            raise TypeError(
                f"step key and executor must be str, got {self.key!r}, {self.executor!r}"
            )
        if self.status not in STEP_STATUSES:
            raise ValueError(f"step status {self.status!r} is not one of {sorted(STEP_STATUSES)}")


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


class StatusFileProblem(NamedTuple):
    """A status file `rebuild_from_status_dir` skipped, and why (unpacks as `path, message`)."""

    path: Path
    message: str


@dataclass(frozen=True, slots=True)
class RebuildResult:
    """What `rebuild_from_status_dir` did.

    Attributes:
        files_read: Status files parsed successfully.
        tasks_upserted: Rows inserted or updated in `tasks`.
        step_rows_inserted: Step runs appended because DuckDB disagreed with a file.
        errors: Files skipped (truncated, not JSON, not a scrapeflow status), one entry each.
    """

    files_read: int
    tasks_upserted: int
    step_rows_inserted: int
    errors: tuple[StatusFileProblem, ...] = ()


class LedgerLockedError(RuntimeError):
    """Another process held the DuckDB file for longer than we were willing to wait."""


class Ledger:
    """Buffers task and step rows and spools them to disk; `sync` moves the spool into DuckDB.

    Safe to share between threads. Several processes may each have a Ledger on the same
    database and the same spool folder: spool names are unique and ingest is idempotent.
    """

    def __init__(
        self,
        db_path: Path,
        *,
        spool_dir: Path | None = None,
        run_id: str | None = None,
        batch_rows: int = 5000,
    ) -> None:
        """Create a ledger; nothing touches DuckDB until `sync`.

        Args:
            db_path: The DuckDB file (created by the first sync).
            spool_dir: Where spool files go; default `<db_path.parent>/ledger-spool/`.
            run_id: Recorded on step rows that carry no run id of their own.
            batch_rows: Rows buffered in memory before they are written to a spool file.

        Raises:
            ValueError: when `batch_rows` is below 1.
            OSError: when the spool folder cannot be created.
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
        self._append(_task_line, row)

    def record_step(self, row: StepRow) -> None:
        """Buffer a step row (message redacted); writes a spool file at `batch_rows` rows.

        Raises:
            OSError: when a due spool file cannot be written (the rows stay buffered).
        """
        self._append(_step_line, row)

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
            write_bytes_atomic(path, bytes(self._buffer))
            self._buffer.clear()
            self._buffered_rows = 0
        return path

    def sync(self, *, lock_timeout_seconds: float = 10.0) -> SyncResult:
        """Ingest every spool file into DuckDB (rows still buffered need `flush` first).

        See `sync_spool`; a held lock is reported in the result, never raised.
        """
        return sync_spool(self.db_path, self.spool_dir, lock_timeout_seconds=lock_timeout_seconds)

    def close(self, *, lock_timeout_seconds: float = 10.0) -> SyncResult | None:
        """Flush, then sync best effort: a DuckDB failure is logged and the spool kept.

        Returns:
            The sync result, or None when the sync failed with a DuckDB error.

        Raises:
            OSError: when the last spool file cannot be written (rows would be lost otherwise).
        """
        self.flush()
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

    def _append(self, to_line: Callable[[Any, int, str | None], bytes], row: object) -> None:
        with self._lock:
            self._buffer += to_line(row, next(self._seq), self.run_id)
            self._buffered_rows += 1
            full = self._buffered_rows >= self.batch_rows
        if full:
            self.flush()


def default_spool_dir(db_path: Path) -> Path:
    """The spool folder used when none is given: `<db_path.parent>/ledger-spool/`."""
    return Path(db_path).parent / SPOOL_DIR_NAME


def new_spool_name() -> str:
    """A unique spool file name `<ts>-<pid>-<uuid>.jsonl` whose name order is write order."""
    # Zero-padded nanoseconds so that sorting names sorts files by the time they were written.
    return f"{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex}{SPOOL_SUFFIX}"


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
    conn = _connect_read_write(Path(db_path), lock_timeout_seconds)
    if conn is None:
        return SyncResult(ingested_rows=0, pending_files=len(_spool_files(spool_dir)), locked=True)
    try:
        conn.execute(sql.SCHEMA_SQL)
        rows, files, bad = _ingest_spool_files(conn, _spool_files(spool_dir))
    finally:
        conn.close()
    return SyncResult(
        ingested_rows=rows,
        pending_files=len(_spool_files(spool_dir)),
        ingested_files=files,
        bad_files=tuple(bad),
    )


def connect_readonly(
    db_path: Path, *, lock_timeout_seconds: float = 10.0
) -> duckdb.DuckDBPyConnection:
    """Open the ledger read-only, waiting while a sync holds it read-write.

    Close it soon: while it is open, syncs in other processes report `locked` and wait.

    Raises:
        LedgerLockedError: when a writer held the file for `lock_timeout_seconds`.
        duckdb.IOException: when the file does not exist.
    """
    deadline = time.monotonic() + lock_timeout_seconds
    for delay in _backoff_delays():
        try:
            return duckdb.connect(str(db_path), read_only=True)
        except (duckdb.IOException, duckdb.ConnectionException) as exc:
            if not _is_lock_conflict(exc):
                raise
            if time.monotonic() + delay > deadline:
                raise LedgerLockedError(f"{db_path} stayed locked: {exc}") from exc
            time.sleep(delay)
    raise AssertionError("unreachable: _backoff_delays is endless")


def rebuild_from_status_dir(
    status_dir: Path,
    db_path: Path,
    *,
    run_id: str = "rebuild",
    lock_timeout_seconds: float = 60.0,
) -> RebuildResult:
    """Make DuckDB agree with the `*.status.json` files in `status_dir`.

    Tasks are upserted from each file's params. For each executor in a file, a step run with
    `run_id` is appended when DuckDB's `current_state` for (key, executor) is missing or
    disagrees with the file's status, last run or (for a SUCCESS) md5. Running it twice changes
    nothing the second time. Rows of tasks without a status file are left alone.

    Args:
        status_dir: Folder of scrapeflow status files (not searched recursively).
        db_path: The DuckDB file; created with the schema when missing.
        run_id: Recorded on the step runs this appends.
        lock_timeout_seconds: How long to wait for another process to release the file.

    Returns:
        The counts, and one `StatusFileProblem` per file that could not be used.

    Raises:
        LedgerLockedError: when another process held the database for `lock_timeout_seconds`.
        OSError: when `status_dir` cannot be listed.
    """
    with tempfile.TemporaryDirectory(prefix="ledger-rebuild-") as tmp:
        rows_path = Path(tmp) / f"rebuild{SPOOL_SUFFIX}"
        # Streamed to a file as parsed, so memory stays flat however many status files there are.
        with rows_path.open("wb") as rows_file:
            files_read, problems = _read_status_dir(Path(status_dir), run_id, rows_file)
        conn = _connect_read_write(Path(db_path), lock_timeout_seconds)
        if conn is None:
            raise LedgerLockedError(f"{db_path} stayed locked for {lock_timeout_seconds} s")
        try:
            conn.execute(sql.SCHEMA_SQL)
            tasks, steps = _in_transaction(conn, lambda: _apply_rebuild(conn, rows_path))
        finally:
            conn.close()
    return RebuildResult(files_read, tasks, steps, tuple(problems))


# --- spool lines -------------------------------------------------------------------------------


def _naive_utc(value: datetime | None) -> datetime | None:
    if value is None or value.tzinfo is None:
        return value
    return value.astimezone(UTC).replace(tzinfo=None)


def _domain(url: str | None) -> str | None:
    if not url:
        return None
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None


def _task_line(row: TaskRow, seq: int, run_id: str | None) -> bytes:
    line = {
        "kind": "t",
        "seq": seq,
        "key": row.key,
        "url": row.url,
        "method": row.method,
        "domain": _domain(row.url),
        "params": row.params,
        "added_at": _naive_utc(row.added_at),
    }
    return orjson.dumps(line, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE)


def _step_line(row: StepRow, seq: int, run_id: str | None) -> bytes:
    line = {
        "kind": "s",
        "seq": seq,
        "key": row.key,
        "executor": row.executor,
        "status": row.status,
        "error_class": row.error_class,
        "error_kind": row.error_kind,
        # Messages quote URLs and headers; credentials in them must never reach DuckDB.
        "message": redact(row.message) if row.message else row.message,
        "attempts": row.attempts,
        "http_status": row.http_status,
        "size": row.size,
        "md5": row.md5,
        "proxy_host": row.proxy_host,
        "domain": row.domain,
        "run_id": row.run_id if row.run_id is not None else run_id,
        "started_at": _naive_utc(row.started_at),
        "ended_at": _naive_utc(row.ended_at),
    }
    return orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE)


# --- DuckDB access -----------------------------------------------------------------------------


def _backoff_delays() -> Iterator[float]:
    delay = 0.02
    while True:
        # Jitter keeps processes that collided once from retrying in lockstep.
        yield delay * random.uniform(0.5, 1.5)
        delay = min(delay * 2, _MAX_BACKOFF_SECONDS)


def _is_lock_conflict(exc: duckdb.Error) -> bool:
    text = str(exc)
    # The second one: this process already has the file open read-only (or vice versa).
    return "Could not set lock" in text or "different configuration" in text


def _connect_read_write(
    db_path: Path, lock_timeout_seconds: float
) -> duckdb.DuckDBPyConnection | None:
    deadline = time.monotonic() + lock_timeout_seconds
    for delay in _backoff_delays():
        try:
            # One thread and a memory cap: a sync is small batched inserts, and DuckDB's
            # defaults (all cores, 80% of RAM) doubled the peak RSS of a run that syncs at its end.
            return duckdb.connect(str(db_path), config=_WRITER_CONFIG)
        except (duckdb.IOException, duckdb.ConnectionException) as exc:
            if not _is_lock_conflict(exc):
                raise
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                logger.info("ledger %s is locked by another process: %s", db_path, exc)
                return None
            time.sleep(min(delay, remaining))
    raise AssertionError("unreachable: _backoff_delays is endless")


def _in_transaction(conn: duckdb.DuckDBPyConnection, work: Callable[[], _T]) -> _T:
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


def _count(result: duckdb.DuckDBPyConnection) -> int:
    row = result.fetchone()
    return int(row[0]) if row else 0


class _SpoolReadError(Exception):
    """A spool file's content is unusable (as opposed to the database failing)."""


# What DuckDB raises for malformed JSON, a value of the wrong type, or a row missing a required
# field; anything else (I/O, out of memory) is the environment and is raised.
_BAD_SPOOL_DATA = (
    duckdb.InvalidInputException,
    duckdb.ConversionException,
    duckdb.ConstraintException,
)


def _load_spool(conn: duckdb.DuckDBPyConnection, paths: Sequence[Path]) -> int:
    conn.execute(sql.LOAD_SPOOL_SQL, [[str(p) for p in paths]])
    return _count(conn.execute(sql.COUNT_SPOOL_SQL))


def _ingest_batch(conn: duckdb.DuckDBPyConnection, paths: Sequence[Path]) -> int:
    def work() -> int:
        rows = _load_spool(conn, paths)
        conn.execute(sql.INSERT_STEPS_SQL)
        conn.execute(sql.UPSERT_TASKS_SQL)
        conn.execute(sql.MARK_INGESTED_SQL, [[p.name for p in paths], utc_now()])
        return rows

    try:
        rows = _in_transaction(conn, work)
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


def _quarantine(path: Path, exc: Exception) -> Path | None:
    bad = path.with_name(path.name + BAD_SPOOL_SUFFIX)
    try:
        os.replace(path, bad)
    except FileNotFoundError:
        return None  # Deleted by hand while we read it: nothing left to set aside.
    logger.error("spool file %s is unusable, moved to %s: %s", path, bad, exc)
    return bad


def _ingest_spool_files(
    conn: duckdb.DuckDBPyConnection, paths: Sequence[Path]
) -> tuple[int, int, list[Path]]:
    rows = files = 0
    bad: list[Path] = []
    for start in range(0, len(paths), FILES_PER_TRANSACTION):
        batch = _drop_already_ingested(conn, paths[start : start + FILES_PER_TRANSACTION])
        if not batch:
            continue
        try:
            rows += _ingest_batch(conn, batch)
            files += len(batch)
            continue
        except _SpoolReadError:
            pass
        # One unreadable file must not hold back the others: retry the batch file by file.
        for path in batch:
            try:
                rows += _ingest_batch(conn, [path])
                files += 1
            except _SpoolReadError as exc:
                moved = _quarantine(path, exc)
                bad.extend([moved] if moved else [])
    return rows, files, bad


def _spool_files(spool_dir: Path) -> list[Path]:
    try:
        entries = list(os.scandir(spool_dir))
    except FileNotFoundError:
        return []
    # Dot-files are the atomic writer's temp files, not yet complete.
    names = sorted(
        e.name for e in entries if e.name.endswith(SPOOL_SUFFIX) and not e.name.startswith(".")
    )
    return [spool_dir / name for name in names]


# --- rebuild from status files -----------------------------------------------------------------


def _apply_rebuild(conn: duckdb.DuckDBPyConnection, rows_path: Path) -> tuple[int, int]:
    _load_spool(conn, [rows_path])
    tasks = _count(conn.execute(sql.UPSERT_TASKS_SQL))
    steps = _count(conn.execute(sql.INSERT_DISAGREEING_STEPS_SQL))
    return tasks, steps


def _read_status_dir(
    status_dir: Path, run_id: str, out: BinaryIO
) -> tuple[int, list[StatusFileProblem]]:
    problems: list[StatusFileProblem] = []
    files_read = 0
    seq = itertools.count()
    with os.scandir(status_dir) as entries:
        names = sorted(e.name for e in entries if e.name.endswith(STATUS_FILE_SUFFIX))
    for name in names:
        path = status_dir / name
        try:
            task, steps = parse_status_file(path, run_id=run_id)
        except (StatusFileError, OSError) as exc:
            problems.append(StatusFileProblem(path, str(exc)))
            continue
        files_read += 1
        out.write(_task_line(task, next(seq), run_id))
        for step in steps:
            out.write(_step_line(step, next(seq), run_id))
    return files_read, problems


def parse_status_file(path: Path, *, run_id: str = "rebuild") -> tuple[TaskRow, list[StepRow]]:
    """Read one scrapeflow `<key>.status.json` as the task row and one step row per executor.

    Executors are the names E with an `E_status` field ("SUCCESS" or "ERROR <Class>::<msg>").

    Raises:
        StatusFileError: when the file is truncated, not JSON, or not a scrapeflow status file;
            the message names the file.
        OSError: when the file cannot be read.
    """
    try:
        data = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise StatusFileError(f"{path}: not valid JSON (truncated?): {exc}") from exc
    if not isinstance(data, dict):
        raise StatusFileError(f"{path}: not a scrapeflow status file (top level is not an object)")
    key, params = data.get("name"), data.get("params")
    if not isinstance(key, str) or not key or not isinstance(params, dict):
        raise StatusFileError(f"{path}: not a scrapeflow status file (no 'name' and 'params')")
    if not isinstance(params.get("url"), str):
        raise StatusFileError(f"{path}: params have no string 'url'")
    domain = _domain(params["url"])
    executors = [k[: -len("_status")] for k in data if _is_executor_status(data, k)]
    steps = [_status_step(path, data, key, e, domain, run_id) for e in executors]
    times = [t for s in steps for t in (s.started_at, s.ended_at) if t is not None]
    # Status files do not record when a task was added; its earliest run is the best bound.
    added_at = min(times) if times else _mtime_utc(path)
    return TaskRow.from_params(key, params, added_at=added_at), steps


def _is_executor_status(data: dict[str, Any], field_name: str) -> bool:
    if not field_name.endswith("_status"):
        return False
    value = data[field_name]
    # Executors with an output, plus those that failed before ever producing one.
    return field_name[: -len("_status")] in data or (
        isinstance(value, str) and value.startswith(("SUCCESS", "ERROR"))
    )


def _status_step(
    path: Path, data: dict[str, Any], key: str, executor: str, domain: str | None, run_id: str
) -> StepRow:
    status_text = data[f"{executor}_status"]
    if status_text == "SUCCESS":
        status, error_class, message = "SUCCESS", None, None
    elif isinstance(status_text, str) and status_text.startswith("ERROR"):
        status = "ERROR"
        error_class, _, message = status_text[len("ERROR") :].strip().partition("::")
    else:
        raise StatusFileError(f"{path}: {executor}_status {status_text!r} is not SUCCESS/ERROR")
    ended_at = _status_time(path, data, f"{executor}_last_run")
    if ended_at is None:
        raise StatusFileError(f"{path}: {executor}_status without {executor}_last_run")
    output = data.get(executor)
    output = output if isinstance(output, dict) and status == "SUCCESS" else {}
    http_status = _int_or_none(output.get("http_status"))
    if http_status is None and message:
        found = _HTTP_STATUS_IN_MESSAGE.search(message)
        http_status = int(found.group(1)) if found else None
    proxy = data.get(f"{executor}_proxy")
    error_kind = data.get(f"{executor}_error_kind")
    return StepRow(
        key=key,
        executor=executor,
        status=status,
        error_class=error_class or None,
        error_kind=error_kind if isinstance(error_kind, str) else None,
        message=message if status == "ERROR" else None,
        attempts=_int_or_none(data.get(f"{executor}_attempts")),
        http_status=http_status,
        size=_int_or_none(output.get("size")),
        md5=output.get("content") if isinstance(output.get("content"), str) else None,
        proxy_host=_recorded_proxy(proxy) if isinstance(proxy, str) else None,
        domain=domain,
        run_id=run_id,
        started_at=_status_time(path, data, f"{executor}_started"),
        ended_at=ended_at,
    )


def _status_time(path: Path, data: dict[str, Any], field_name: str) -> datetime | None:
    value = data.get(field_name)
    if value is None:
        return None
    try:
        return _naive_utc(datetime.fromisoformat(value))
    except (TypeError, ValueError) as exc:
        raise StatusFileError(f"{path}: {field_name} {value!r} is not a timestamp") from exc


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _recorded_proxy(value: str) -> str | None:
    # Files should hold `host:port`; anything with credentials is cut down to that.
    if "@" in value or "://" in value:
        return proxy_host(value if "://" in value else f"http://{value}")
    return value


def _mtime_utc(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, UTC).replace(tzinfo=None)
