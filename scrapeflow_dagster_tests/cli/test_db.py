"""`scrapeflow db sync | rebuild` as real processes: one readable line each, and a DuckDB file
held by another process named with that process, within seconds, exit 2."""

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.cli.helpers import Run, add_through_the_cli
from scrapeflow_dagster_tests.support.paths import PYTHON

_HOLDER_SCRIPT = """
import sys

import duckdb

conn = duckdb.connect(sys.argv[1])  # read-write: DuckDB lets no other process in
print("holding", flush=True)
sys.stdin.read()  # until the test closes our stdin
"""


@pytest.fixture
def stored(run_command: Run, site_thread: SiteThread, tmp_path: Path, layout: DataLayout) -> Path:
    """Two tasks added (so DuckDB exists); returns the DuckDB file."""
    rows = [(f"d-{n}", site_thread.url(f"/page/{n}")) for n in range(2)]
    add_through_the_cli(run_command, tmp_path, rows)
    return layout.db_path


@pytest.fixture
def holder(stored: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the DuckDB file read-write."""
    proc = subprocess.Popen(
        [PYTHON, "-c", _HOLDER_SCRIPT, str(stored)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "holding\n"
    yield proc
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=30)


def test_db_sync_and_rebuild_print_one_readable_line(run_command: Run, stored: Path) -> None:
    synced = run_command("scrapeflow", "db", "sync")
    rebuilt = run_command("scrapeflow", "db", "rebuild")

    assert (synced.returncode, rebuilt.returncode) == (0, 0), synced.stderr + rebuilt.stderr
    assert synced.stdout.splitlines() == [
        f"synced 0 rows from 0 spool files into {stored}; 0 pending (locked=False)"
    ]
    assert rebuilt.stdout.splitlines() == [
        f"rebuilt {stored} from 2 status files: 2 tasks upserted, "
        "0 step runs added where DuckDB disagreed"
    ]
    assert "Result(" not in synced.stdout + rebuilt.stdout


@pytest.mark.parametrize(
    ("action", "options", "limit_seconds"),
    [
        ("rebuild", [], 12.0),
        ("sync", ["--lock-timeout", "1"], 5.0),
        ("summary", ["--lock-timeout", "1"], 8.0),
    ],
)
def test_a_held_duckdb_names_the_file_and_its_holder_and_exits_2(
    run_command: Run,
    stored: Path,
    holder: subprocess.Popen[str],
    action: str,
    options: list[str],
    limit_seconds: float,
) -> None:
    # The same command's start-up, measured here: on a loaded machine it alone has taken
    # 20 s. The bound is on the wait for the lock, which must end long before the 60 s below.
    started = time.monotonic()
    run_command("scrapeflow", "db", action, "--help", timeout_seconds=60)
    startup = time.monotonic() - started
    started = time.monotonic()
    done = run_command("scrapeflow", "db", action, *options, timeout_seconds=60)
    elapsed = time.monotonic() - started

    assert done.returncode == 2, done.stdout + done.stderr
    assert elapsed < limit_seconds + 2 * startup, (elapsed, startup)
    assert str(stored) in done.stderr and f"PID {holder.pid} (" in done.stderr, done.stderr
    assert "duckdb.connect" in done.stderr  # its command line, from /proc
    assert "Traceback" not in done.stderr


def test_a_broken_duckdb_file_is_said_and_rebuild_sets_it_aside(
    run_command: Run, stored: Path
) -> None:
    stored.write_bytes(b"not a database")

    summary = run_command("scrapeflow", "db", "summary")
    found = run_command("scrapeflow", "tasks", "find", "/page/1")
    rebuilt = run_command("scrapeflow", "db", "rebuild")
    again = run_command("scrapeflow", "db", "summary")

    assert summary.returncode == 2 and "Traceback" not in summary.stderr, summary.stderr
    assert "not a valid DuckDB database file" in summary.stderr
    assert "scrapeflow db rebuild" in summary.stderr
    # The status files still answer what DuckDB cannot.
    assert found.returncode == 0 and "d-1" in found.stdout, found.stdout + found.stderr
    assert rebuilt.returncode == 0, rebuilt.stderr
    [aside] = stored.parent.glob(f"{stored.name}.broken-*")
    assert aside.read_bytes() == b"not a database"  # kept, never deleted
    assert f"kept as {aside}" in rebuilt.stdout
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
