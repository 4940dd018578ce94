"""Sync against other processes holding DuckDB, two writers at once, crashes, bad spool files."""

import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from scrapeflow_dagster.engine.history import (
    Ledger,
    LedgerLockedError,
    TaskRow,
    connect_readonly,
    sync_spool,
)
from scrapeflow_dagster.engine.history.recording import sync as sync_module
from scrapeflow_dagster_tests.engine.history.helpers import (
    REPO_ROOT,
    query,
    release,
    spool_entries,
    spool_files,
    step,
)


@pytest.mark.parametrize("mode", ["rw", "ro"])
def test_sync_reports_lock_held_by_another_process_and_loses_nothing(
    db_path: Path, hold_database: Any, mode: str
) -> None:
    with Ledger(db_path) as ledger:  # creates the database so a read-only holder can open it
        ledger.record_step(step("first", 0))
    holder = hold_database(db_path, mode)
    ledger = Ledger(db_path, batch_rows=100)
    for i in range(250):
        ledger.record_step(step(f"k{i}", i))
        ledger.record_task(TaskRow.from_params(f"k{i}", {"url": f"https://x.test/{i}"}))
    ledger.flush()
    pending = spool_files(ledger.spool_dir)

    started = time.monotonic()
    result = ledger.sync(lock_timeout_seconds=0.3)
    assert time.monotonic() - started < 3.0
    assert result.locked and result.ingested_rows == 0 and result.pending_files == len(pending)
    assert spool_files(ledger.spool_dir) == pending
    close_result = ledger.close(lock_timeout_seconds=0.1)  # best effort: no exception either
    assert close_result is not None and close_result.locked

    release(holder)
    result = ledger.sync()

    assert (result.locked, result.ingested_rows, result.pending_files) == (False, 500, 0)
    assert query(db_path, "SELECT count(*), count(DISTINCT key) FROM step_runs") == [(251, 251)]
    assert query(db_path, "SELECT count(*) FROM tasks") == [(250,)]


def test_connect_readonly_waits_for_a_writer(db_path: Path, hold_database: Any) -> None:
    with Ledger(db_path) as ledger:
        ledger.record_step(step("a", 0))
    holder = hold_database(db_path, "rw")
    with pytest.raises(LedgerLockedError):
        connect_readonly(db_path, lock_timeout_seconds=0.2)
    release(holder)
    assert query(db_path, "SELECT count(*) FROM step_runs") == [(1,)]


WRITER = textwrap.dedent(
    """
    import sys
    import time
    from datetime import datetime
    from pathlib import Path
    from scrapeflow_dagster.engine.history import Ledger, StepRow, TaskRow

    db_path, name, rows = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    spool = Path(sys.argv[4]) if len(sys.argv) > 4 else None
    ledger = Ledger(db_path, spool_dir=spool, run_id=name, batch_rows=250)
    go = db_path.parent / "go"
    while not go.exists():  # start together, so that the syncs really collide
        time.sleep(0.001)
    locked = 0
    for i in range(rows):
        ledger.record_task(TaskRow.from_params(f"shared-{i % 50}", {"url": f"https://x.test/{i}"}))
        ledger.record_step(StepRow(f"{name}-{i}", "scrape", "SUCCESS", ended_at=datetime.now()))
        if i % 500 == 499:
            ledger.flush()
            locked += ledger.sync(lock_timeout_seconds=0.01).locked  # a lock is no failure
    result = ledger.close(lock_timeout_seconds=60)
    assert result is not None and not result.locked, result
    print(locked)
    """
)


@pytest.mark.parametrize("shared_spool", [True, False])
def test_two_processes_write_at_once_and_every_row_lands_once(
    db_path: Path, tmp_path: Path, shared_spool: bool
) -> None:
    rows = 10_000
    procs = []
    for name in ("p1", "p2"):
        args = [sys.executable, "-c", WRITER, str(db_path), name, str(rows)]
        if not shared_spool:
            args.append(str(tmp_path / f"spool-{name}"))
        procs.append(
            subprocess.Popen(
                args, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
        )
    time.sleep(0.5)  # both interpreters up and waiting
    (db_path.parent / "go").touch()
    locked_syncs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        locked_syncs.append(int(out))
    print("syncs that found the database locked:", locked_syncs)

    counts = query(
        db_path, "SELECT run_id, count(*), count(DISTINCT key) FROM step_runs GROUP BY 1"
    )
    assert sorted(counts) == [("p1", rows, rows), ("p2", rows, rows)]
    assert query(db_path, "SELECT count(*) FROM tasks") == [(50,)]
    ingested = query(db_path, "SELECT count(*) FROM ingested_spool_files")[0][0]
    assert ingested == 2 * (2 * rows // 250)


def test_crash_between_commit_and_delete_creates_no_duplicates(db_path: Path) -> None:
    ledger = Ledger(db_path)
    for i in range(10):
        ledger.record_step(step(f"k{i}", i))
    spool_file = ledger.flush()
    assert spool_file is not None
    saved = spool_file.read_bytes()
    assert ledger.sync().ingested_rows == 10

    spool_file.write_bytes(saved)  # as if the process died after COMMIT, before unlink
    result = ledger.sync()

    assert (result.ingested_rows, result.ingested_files, result.pending_files) == (0, 0, 0)
    assert not spool_file.exists()
    assert query(db_path, "SELECT count(*) FROM step_runs") == [(10,)]


def test_unusable_spool_files_are_set_aside_and_the_rest_ingested(db_path: Path) -> None:
    ledger = Ledger(db_path, batch_rows=1)  # one file per row: 150 files, several transactions
    for i in range(150):
        ledger.record_step(step(f"k{i}", i))
    names = [p.name for p in spool_files(ledger.spool_dir)]
    malformed = ledger.spool_dir / names[10].replace(".jsonl", "-x.jsonl")
    malformed.write_bytes(b'{"kind": "s", "key": "x", "attempts": "not a number"}\n{"trunc')
    no_key = ledger.spool_dir / names[100].replace(".jsonl", "-y.jsonl")
    no_key.write_bytes(b'{"kind": "s", "executor": "scrape", "status": "SUCCESS"}\n')

    result = sync_spool(db_path)

    assert (result.ingested_rows, result.ingested_files, result.pending_files) == (150, 150, 0)
    set_aside = (
        malformed.with_name(malformed.name + ".bad"),
        no_key.with_name(no_key.name + ".bad"),
    )
    assert result.bad_files == set_aside
    assert all(path.exists() for path in set_aside)
    assert query(db_path, "SELECT count(DISTINCT key) FROM step_runs") == [(150,)]


def test_a_file_from_before_the_canonical_columns_gains_them_and_keeps_its_rows(
    db_path: Path,
) -> None:
    import duckdb

    old = duckdb.connect(str(db_path))
    old.execute(
        "CREATE TABLE tasks (key VARCHAR PRIMARY KEY, url VARCHAR, method VARCHAR, "
        "domain VARCHAR, params JSON, added_at TIMESTAMP)"
    )
    old.execute("INSERT INTO tasks VALUES ('old', 'http://a.test/x', 'GET', 'a.test', '{}', now())")
    old.close()
    ledger = Ledger(db_path)
    ledger.record_task(TaskRow("new", "HTTP://A.test:80/y?b=1&a=2#f", "GET", {}))
    ledger.flush()

    assert ledger.sync().ingested_rows == 1

    assert query(db_path, "SELECT key, url, canonical_url FROM tasks ORDER BY key") == [
        ("new", "HTTP://A.test:80/y?b=1&a=2#f", "http://a.test/y?a=2&b=1"),
        ("old", "http://a.test/x", None),
    ]


def test_spool_files_ingested_together_keep_their_write_order(db_path: Path) -> None:
    first = Ledger(db_path)
    first.record_task(TaskRow("k", "http://a.test/first", "GET", {}))
    first.record_step(step("a", 1))
    first.flush()
    second = Ledger(db_path)  # its rows number from 0 again: file order decides across files
    second.record_task(TaskRow("k", "http://a.test/second", "GET", {}))
    second.record_step(step("b", 2))
    second.flush()

    result = first.sync()  # both files, read by DuckDB as one

    assert (result.ingested_rows, result.ingested_files, result.pending_files) == (4, 2, 0)
    assert query(db_path, "SELECT url FROM tasks WHERE key = 'k'") == [("http://a.test/second",)]
    assert query(db_path, "SELECT key FROM step_runs ORDER BY seq") == [("a",), ("b",)]
    assert spool_entries(first.spool_dir) == []  # nor the file that joined them


def test_a_sync_removes_joined_files_left_by_a_killed_one_and_reads_indented_lines(
    db_path: Path,
) -> None:
    ledger = Ledger(db_path)
    ledger.record_step(step("a", 1))
    first = ledger.flush()
    ledger.record_step(step("b", 2))
    ledger.flush()
    assert first is not None
    first.write_bytes(b"  " + first.read_bytes())  # a line indented by hand
    left = ledger.spool_dir / ".joined-0123.jsonl"  # a sync killed before it removed it
    left.write_bytes(b'{"kind": "s", "key": "left"}\n')

    result = ledger.sync()

    assert (result.ingested_rows, result.ingested_files, result.bad_files) == (2, 2, ())
    assert query(db_path, "SELECT key FROM step_runs ORDER BY seq") == [("a",), ("b",)]
    assert spool_entries(ledger.spool_dir) == []


def test_a_batch_too_large_for_the_ingest_cap_is_ingested_under_the_connections_own(
    db_path: Path,
) -> None:
    # 40 rows of ~2.6 MB each, 5 per file: DuckDB runs out of memory under INGEST_MEMORY_LIMIT
    # (checked below), and has room under the writer's own cap.
    big = "a failure message that goes on " * 85_000
    ledger = Ledger(db_path, batch_rows=5)
    for i in range(40):
        ledger.record_step(step(f"k{i}", i, message=big))
    ledger.close(sync=False)

    refused = []
    original = sync_module._ingest_batch

    def watched(conn: Any, paths: Any) -> int:
        try:
            return original(conn, paths)
        except duckdb.OutOfMemoryException:
            refused.append(conn.execute("SELECT current_setting('memory_limit')").fetchone()[0])
            raise

    sync_module._ingest_batch = watched
    try:
        result = sync_spool(db_path)
    finally:
        sync_module._ingest_batch = original
    assert refused, "the batch fit under the ingest cap: make the rows larger"
    assert result.ingested_rows == 40 and result.pending_files == 0 and not result.bad_files
    assert query(db_path, "SELECT count(*), min(length(message)) FROM step_runs") == [
        (40, len(big))
    ]


def test_a_sync_leaves_the_connections_memory_cap_as_it_found_it(db_path: Path) -> None:
    from scrapeflow_dagster.engine.history.database.connection import connect_read_write

    with Ledger(db_path) as ledger:
        ledger.record_step(step("first", 0))
    conn = connect_read_write(db_path, 5.0)
    assert conn is not None
    try:
        before = conn.execute("SELECT current_setting('memory_limit')").fetchone()
        with Ledger(db_path, batch_rows=10) as ledger:
            for i in range(25):
                ledger.record_step(step(f"k{i}", i))
            ledger.flush()
            sync_module.sync_spool_into(conn, ledger.spool_dir)
        after = conn.execute("SELECT current_setting('memory_limit')").fetchone()
        # DuckDB shows the cap to a tenth of a MiB: set back from that, it may differ by as much.
        assert before is not None and after is not None and before[0].endswith(" MiB")
        assert abs(float(after[0].split()[0]) - float(before[0].split()[0])) <= 0.1
        assert conn.execute("SELECT count(*) FROM step_runs").fetchone() == (26,)
    finally:
        conn.close()
