"""Rebuild: make DuckDB agree with the status files, which stay the truth.

Status files are read through `engine.state` (the one owner of their format) and turned into
the same spool lines a `Ledger` writes; DuckDB then upserts the tasks and appends a step run
only where its `current_state` disagrees with a file.
"""

import itertools
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, NamedTuple

import duckdb

from scrapeflow_dagster.engine.errors import StatusFileError
from scrapeflow_dagster.engine.history.database import schema
from scrapeflow_dagster.engine.history.database import spool_sql as sql
from scrapeflow_dagster.engine.history.database.connection import (
    LedgerLockedError,
    connect_read_write,
)
from scrapeflow_dagster.engine.history.database.current import ensure_current, refresh_current
from scrapeflow_dagster.engine.history.recording import render_choices
from scrapeflow_dagster.engine.history.recording.rows import (
    OutputRow,
    PageRow,
    StepRow,
    TaskRow,
)
from scrapeflow_dagster.engine.history.recording.spool import SPOOL_SUFFIX
from scrapeflow_dagster.engine.history.recording.spool_lines import (
    domain_of,
    output_line,
    page_line,
    step_line,
    task_line,
)
from scrapeflow_dagster.engine.history.recording.sync import count, in_transaction, load_spool
from scrapeflow_dagster.engine.state import schema as status_schema
from scrapeflow_dagster.engine.state.files import iter_status_files, parse_status_bytes
from scrapeflow_dagster.engine.state.schema import StatusData


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
        set_aside: Where a file that was not a DuckDB database was moved before the rebuild
            started a new one (None when the file was usable or missing).
    """

    files_read: int
    tasks_upserted: int
    step_rows_inserted: int
    errors: tuple[StatusFileProblem, ...] = ()
    set_aside: Path | None = None


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
            # Sorted so that two rebuilds of the same folder write the same rows in the same order.
            paths = sorted(iter_status_files(Path(status_dir)))
            files_read, problems = write_status_rows(paths, run_id, rows_file)
        set_aside = None
        try:
            conn = connect_read_write(Path(db_path), lock_timeout_seconds)
        except duckdb.Error as exc:
            if NOT_A_DATABASE not in str(exc):
                raise
            # Rebuilding is how a broken file is repaired: it is kept aside (the frontier and
            # pages rows it may still hold are not in the status files), never deleted.
            set_aside = set_aside_broken(Path(db_path))
            conn = connect_read_write(Path(db_path), lock_timeout_seconds)
        if conn is None:
            raise LedgerLockedError(f"{db_path} stayed locked for {lock_timeout_seconds} s")
        try:
            conn.execute(schema.SCHEMA_SQL)
            ensure_current(conn, rebuild=True)
            tasks, steps = in_transaction(conn, lambda: apply_status_rows(conn, rows_path))
            render_choices.publish_best_effort(conn, changed=True)
        finally:
            conn.close()
    return RebuildResult(files_read, tasks, steps, tuple(problems), set_aside)


# DuckDB's words for a file that is not one of its databases (a truncated or foreign file).
NOT_A_DATABASE = "not a valid DuckDB database file"


def set_aside_broken(db_path: Path) -> Path:
    """Move a broken DuckDB file (and its WAL) to `<name>.broken-<UTC stamp>`; the new name."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = db_path.with_name(f"{db_path.name}.broken-{stamp}")
    os.replace(db_path, target)
    wal = db_path.with_name(db_path.name + ".wal")
    if wal.exists():
        os.replace(wal, target.with_name(target.name + ".wal"))
    return target


def parse_status_file(path: Path, *, run_id: str = "rebuild") -> tuple[TaskRow, list[StepRow]]:
    """Read one scrapeflow `<key>.status.json` as the task row and one step row per executor
    (see `parse_status_file_rows`, which also returns its parsed pages)."""
    rows = parse_status_file_rows(path, run_id=run_id)
    return rows.task, rows.steps


class StatusFileRows(NamedTuple):
    """The rows one status file stands for."""

    task: TaskRow
    steps: list[StepRow]
    pages: list[PageRow]
    outputs: list[OutputRow]


def parse_status_file_rows(path: Path, *, run_id: str = "rebuild") -> StatusFileRows:
    """Read one scrapeflow `<key>.status.json` as the task row and one step row per executor.

    The executors are those `state.schema.executor_names` finds (a SUCCESS or ERROR outcome).

    Args:
        path: The status file.
        run_id: Recorded on the step rows.

    Returns:
        The task row (added at the earliest recorded time), the step rows in file order, an
        output row per successful step, and a page row for each whose output is a parsed page.

    Raises:
        StatusFileError: when the file is truncated, not JSON, not a scrapeflow status file, or
            has an output whose outcome is not SUCCESS/ERROR or an outcome without a valid last
            run; the message names the file.
        OSError: when the file cannot be read.
    """
    status = parse_status_bytes(path.read_bytes(), path)
    key, params = status.get("name"), status["params"]
    if not isinstance(key, str) or not key:
        raise StatusFileError(f"{path}: not a scrapeflow status file (no 'name')")
    if not isinstance(params.get("url"), str):
        raise StatusFileError(f"{path}: params have no string 'url'")
    domain = domain_of(params["url"])
    names = status_schema.executor_names(status)
    # An output whose outcome is neither SUCCESS nor ERROR is damage, not "never ran": the file
    # is reported rather than half recorded.
    for name in status:
        if status_schema.has_run(status, name) and name not in names:
            outcome = status[status_schema.fields_of(name).status]
            raise StatusFileError(f"{path}: {name} has outcome {outcome!r}, not SUCCESS/ERROR")
    steps = [_step_row(path, status, key, n, domain=domain, run_id=run_id) for n in names]
    times = [t for s in steps for t in (s.started_at, s.ended_at) if t is not None]
    # Status files do not record when a task was added; its earliest run is the best bound.
    added_at = min(times) if times else _mtime_utc(path)
    succeeded = [
        (step, status_schema.output_of(status, step.executor))
        for step in steps
        if step.status == "SUCCESS"
    ]
    pages = [
        page
        for step, output in succeeded
        if (page := PageRow.from_output(key, output, parsed_at=step.ended_at)) is not None
    ]
    try:
        outputs = [
            OutputRow.of(key, step.executor, output, url=params["url"], ended_at=step.ended_at)
            for step, output in succeeded
        ]
    except TypeError as exc:  # a hand-edited file can hold nothing JSON cannot: said anyway
        raise StatusFileError(f"{path}: an output is not JSON: {exc}") from exc
    task = TaskRow.from_params(key, params, added_at=added_at)
    return StatusFileRows(task, steps, pages, outputs)


def _step_row(
    path: Path, status: StatusData, key: str, name: str, *, domain: str | None, run_id: str
) -> StepRow:
    fields = status_schema.fields_of(name)
    ended_at = _checked_stamp(path, status, fields.last_run)
    if ended_at is None:
        raise StatusFileError(f"{path}: {fields.status} without {fields.last_run}")
    error_class, message = status_schema.error_parts(status, name)
    return StepRow(
        key=key,
        executor=name,
        status="ERROR" if status_schema.is_error(status, name) else "SUCCESS",
        error_class=error_class,
        error_kind=status_schema.error_kind(status, name),
        message=message,
        attempts=status_schema.attempts(status, name),
        http_status=status_schema.http_status_of(status, name),
        size=status_schema.size_of(status, name),
        md5=status_schema.md5_of(status, name),
        proxy_host=status_schema.proxy_of(status, name),
        domain=domain,
        run_id=run_id,
        started_at=_checked_stamp(path, status, fields.started),
        ended_at=ended_at,
    )


def _checked_stamp(path: Path, status: StatusData, field: str) -> datetime | None:
    # parse_stamp reads a bad value as "unknown"; here it makes the file unusable instead, so
    # DuckDB never gets a step run timed by a guess.
    value = status.get(field)
    moment = status_schema.parse_stamp(value)
    if moment is None and value is not None:
        raise StatusFileError(f"{path}: {field} {value!r} is not a timestamp")
    return moment


def write_status_rows(
    paths: Iterable[Path], run_id: str, out: BinaryIO
) -> tuple[int, list[StatusFileProblem]]:
    """Write the spool lines of the status files `paths` (task, steps, pages) to `out`.

    Returns:
        How many files were read, and one `StatusFileProblem` per file that could not be.
    """
    problems: list[StatusFileProblem] = []
    files_read = 0
    seq = itertools.count()
    for path in paths:
        try:
            rows = parse_status_file_rows(path, run_id=run_id)
        except (StatusFileError, OSError) as exc:
            problems.append(StatusFileProblem(path, str(exc)))
            continue
        files_read += 1
        out.write(task_line(rows.task, next(seq), run_id))
        for step in rows.steps:
            out.write(step_line(step, next(seq), run_id))
        for output in rows.outputs:
            out.write(output_line(output, next(seq), run_id))
        for page in rows.pages:
            out.write(page_line(page, next(seq), run_id))
    return files_read, problems


def apply_status_rows(conn: duckdb.DuckDBPyConnection, rows_path: Path) -> tuple[int, int]:
    """Make DuckDB agree with the rows `write_status_rows` wrote (call it in a transaction):
    tasks upserted, a step run appended where `current_state` disagrees, outputs and pages
    upserted, and the outputs of steps the files show failed since removed.

    Returns:
        Tasks upserted, step runs appended.
    """
    load_spool(conn, [rows_path])
    tasks = count(conn.execute(sql.UPSERT_TASKS_SQL))
    steps = count(conn.execute(sql.INSERT_DISAGREEING_STEPS_SQL))
    refresh_current(conn)
    conn.execute(sql.UPSERT_OUTPUTS_SQL)
    conn.execute(sql.DELETE_FAILED_OUTPUTS_SQL)
    conn.execute(sql.UPSERT_EXTRACTED_SQL)
    conn.execute(sql.DELETE_STALE_EXTRACTED_SQL)
    conn.execute(sql.UPSERT_PAGES_SQL)
    conn.execute(sql.UPSERT_PAGE_TEXT_SQL)
    conn.execute(sql.DELETE_STALE_PAGE_TEXT_SQL)
    conn.execute(sql.UPSERT_MAIN_CONTENT_SQL)
    conn.execute(sql.DELETE_STALE_MAIN_CONTENT_SQL)
    conn.execute(sql.INSERT_CHANGES_SQL)
    render_choices.ingest(conn)
    return tasks, steps


def _mtime_utc(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, UTC).replace(tzinfo=None)
