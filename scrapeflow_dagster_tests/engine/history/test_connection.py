"""Opening the DuckDB file: processes that all find it missing and open it read-write at once
each get a usable database (DuckDB's own creation in place let one read another's half-written
header)."""

import subprocess
import sys
import time
from pathlib import Path

from scrapeflow_dagster.engine.history.database.connection import (
    connect_read_write,
    connect_readonly,
)
from scrapeflow_dagster_tests.support.paths import REPO_ROOT

OPENER = """
import sys, time
from pathlib import Path
from scrapeflow_dagster.engine.history.database import connection

db_path, go = Path(sys.argv[1]), Path(sys.argv[2])
while not go.exists():
    time.sleep(0.001)
conn = connection.connect_read_write(db_path, 30.0)
assert conn is not None
conn.execute("CREATE TABLE IF NOT EXISTS t (x INTEGER)")
conn.close()
"""
PROCESSES = 6
ROUNDS = 4


def test_processes_that_create_the_file_at_once_all_open_it(tmp_path: Path) -> None:
    for round_ in range(ROUNDS):
        db_path, go = tmp_path / f"ledger-{round_}.duckdb", tmp_path / f"go-{round_}"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", OPENER, str(db_path), str(go)],
                cwd=REPO_ROOT,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(PROCESSES)
        ]
        time.sleep(0.5)  # every interpreter up and polling
        go.touch()
        failures = [
            err for proc in procs if (err := proc.communicate(timeout=60)[1]) and proc.returncode
        ]
        assert failures == [], failures[0]
        assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".creating")] == []


def test_connections_draw_no_progress_bar(tmp_path: Path) -> None:
    """DuckDB would draw one on stdout for a query past 2 s, amid a command's output."""
    db_path = tmp_path / "ledger.duckdb"
    writer = connect_read_write(db_path, 5.0)
    assert writer is not None
    query = "SELECT current_setting('enable_progress_bar')"
    assert writer.execute(query).fetchall() == [(False,)]
    writer.close()
    reader = connect_readonly(db_path)
    assert reader.execute(query).fetchall() == [(False,)]
    reader.close()
