"""Repair: the rows a killed run had buffered, recorded again from the status files.

A Ledger killed with rows in its buffer leaves its marker (`open_markers`), and the status files
hold what those rows said. `repair_from_status_files` gives DuckDB the rows of the files
changed since the marker's time, as `rebuild_from_status_dir` does for a whole folder: a step
run is appended only where `current_state` disagrees with a file, so rows DuckDB already had are
not doubled. Straight into DuckDB, not through the spool: the spool's ingest appends every row.
`repair_dead_markers` finds those files and retires the markers.
"""

import math
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb

from scrapeflow_dagster.engine.history.from_status_files.rebuild import (
    StatusFileProblem,
    apply_status_rows,
    write_status_rows,
)
from scrapeflow_dagster.engine.history.markers.open_markers import (
    OpenMarker,
    remove_marker,
    rewrite_since,
)
from scrapeflow_dagster.engine.history.recording.spool import SPOOL_SUFFIX
from scrapeflow_dagster.engine.history.recording.sync import in_transaction
from scrapeflow_dagster.engine.state.schema import STATUS_SUFFIX

REPAIR_RUN_ID = "repair"


@dataclass(frozen=True, slots=True)
class RepairResult:
    """What one repair did.

    Attributes:
        files_read: Status files read.
        step_rows_inserted: Step runs appended where DuckDB disagreed with a file.
        problems: Files that could not be used (the status summary skips them too).
    """

    files_read: int
    step_rows_inserted: int
    problems: tuple[StatusFileProblem, ...] = ()


def repair_from_status_files(
    conn: duckdb.DuckDBPyConnection, paths: Iterable[Path], *, run_id: str = REPAIR_RUN_ID
) -> RepairResult:
    """Make DuckDB agree with the status files `paths`, in one transaction.

    Args:
        conn: A read-write connection whose schema exists (after a sync).
        paths: The status files; missing ones are skipped.
        run_id: Recorded on the step runs appended.

    Raises:
        duckdb.Error: when the database fails (nothing is then changed).
        OSError: when the temp folder for the rows cannot be written.
    """
    with tempfile.TemporaryDirectory(prefix="ledger-repair-") as tmp:
        rows_path = Path(tmp) / f"repair{SPOOL_SUFFIX}"
        with rows_path.open("wb") as rows_file:
            existing = [p for p in sorted(paths) if p.exists()]
            files_read, problems = write_status_rows(existing, run_id, rows_file)
        if not files_read:
            return RepairResult(0, 0, tuple(problems))
        _, steps = in_transaction(conn, lambda: apply_status_rows(conn, rows_path))
    return RepairResult(files_read, steps, tuple(problems))


def repair_dead_markers(
    conn: duckdb.DuckDBPyConnection,
    status_dir: Path,
    markers: Sequence[OpenMarker],
    changed: Mapping[str, int],
    *,
    margin_seconds: float,
    is_dead: Mapping[Path, bool] | None = None,
) -> tuple[int, RepairResult] | None:
    """Record again what the runs of dead markers lost, then remove those markers.

    Files a live Ledger may also still record (changed since the oldest live marker's time)
    are left for a later call, so no step is recorded twice: the dead markers move up to that
    time instead of going.

    Args:
        conn: A read-write connection whose schema exists (after a sync).
        status_dir: The status folder.
        markers: Every marker, read before the spool was synced.
        changed: Key -> modification time (Unix ns) of each status file changed since the
            oldest marker's time less `margin_seconds`.
        margin_seconds: How far before a marker's time files may have been written.
        is_dead: Per marker path, whether its process is gone, as the caller found it when
            it chose which files to look at (default: asked here).

    Returns:
        How many markers were dead and what the repair did; None when none was.

    Raises:
        duckdb.Error: when the database fails (the markers are then kept).
        OSError: when a marker cannot be removed or rewritten.
    """
    if is_dead is None:  # asked once: a process may end meanwhile
        is_dead = {m.path: m.is_dead() for m in markers}
    dead = [m for m in markers if is_dead[m.path]]
    if not dead:
        return None
    live = [m.since for m in markers if not is_dead[m.path]]
    until = min(live) if live else math.inf
    start_ns = (min(m.since for m in dead) - margin_seconds) * 1e9
    end_ns = (until - margin_seconds) * 1e9
    paths = [
        status_dir / f"{key}{STATUS_SUFFIX}"
        for key, mtime_ns in changed.items()
        if start_ns <= mtime_ns < end_ns
    ]
    result = repair_from_status_files(conn, paths)
    for marker in dead:
        if not live:
            remove_marker(marker)
        elif marker.since < until:
            rewrite_since(marker, until)
    return len(dead), result
