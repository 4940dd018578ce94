"""The DuckDB ledger against real database files, other processes holding them, and crashes."""

import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pytest

from scrapeflow_dagster.engine.ledger import (
    Ledger,
    LedgerLockedError,
    StepRow,
    TaskRow,
    connect_readonly,
    rebuild_from_status_dir,
    sync_spool,
)

T0 = datetime(2026, 11, 22, 14, 0, 0)
REPO_ROOT = Path(__file__).resolve().parents[2]


def step(key: str, minutes: int, status: str = "SUCCESS", **fields: Any) -> StepRow:
    return StepRow(
        key=key,
        executor="scrape",
        status=status,
        started_at=T0 + timedelta(minutes=minutes),
        ended_at=T0 + timedelta(minutes=minutes, seconds=2),
        **fields,
    )


def query(db_path: Path, sql: str) -> list[tuple[Any, ...]]:
    with connect_readonly(db_path) as conn:
        return conn.execute(sql).fetchall()


def spool_files(spool_dir: Path) -> list[Path]:
    return sorted(spool_dir.glob("*.jsonl"))


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "ledger.duckdb"


def test_rows_are_spooled_in_batches_and_synced(db_path: Path) -> None:
    ledger = Ledger(db_path, run_id="r1", batch_rows=3)
    ledger.record_task(TaskRow.from_params("a", {"url": "https://Example.com/a"}, added_at=T0))
    ledger.record_step(step("a", 0, "ERROR", error_class="HttpStatusError", http_status=503))
    ledger.record_step(step("a", 5, md5="abc", size=10))
    assert len(spool_files(ledger.spool_dir)) == 1  # batch_rows reached: written, not synced
    ledger.record_step(step("a", 9, "SKIPPED"))
    assert ledger.flush() is not None
    assert ledger.flush() is None
    assert not db_path.exists()  # writers never open DuckDB

    result = ledger.sync()

    assert (result.ingested_rows, result.ingested_files, result.pending_files) == (4, 2, 0)
    assert not result.locked
    assert spool_files(ledger.spool_dir) == []
    assert query(db_path, "SELECT key, url, method, domain, params->>'url' FROM tasks") == [
        ("a", "https://Example.com/a", "GET", "example.com", "https://Example.com/a")
    ]
    rows = query(db_path, "SELECT status, run_id, elapsed_seconds FROM step_runs ORDER BY seq")
    assert rows == [("ERROR", "r1", 2.0), ("SUCCESS", "r1", 2.0), ("SKIPPED", "r1", 2.0)]
    # The newest non-SKIPPED run is the current state.
    assert query(db_path, "SELECT status, md5, size FROM current_state") == [("SUCCESS", "abc", 10)]


def test_current_state_picks_latest_per_key_and_executor(db_path: Path) -> None:
    with Ledger(db_path) as ledger:
        ledger.record_step(step("a", 10, "ERROR"))  # recorded first, but the latest run
        ledger.record_step(step("a", 1))
        ledger.record_step(step("b", 1))
        ledger.record_step(StepRow("b", "parse", "ERROR", ended_at=T0))
    rows = query(db_path, "SELECT key, executor, status FROM current_state ORDER BY ALL")
    assert rows == [("a", "scrape", "ERROR"), ("b", "parse", "ERROR"), ("b", "scrape", "SUCCESS")]


def test_tasks_upsert_newer_params_win_first_added_at_kept(db_path: Path) -> None:
    with Ledger(db_path) as ledger:
        ledger.record_task(TaskRow.from_params("k", {"url": "https://a.test/1"}, added_at=T0))
        later = T0 + timedelta(hours=1)
        ledger.record_task(TaskRow.from_params("k", {"url": "https://a.test/2"}, added_at=later))
    with Ledger(db_path) as ledger:  # a second run, a second sync
        params = {"url": "https://b.test/3", "post_payload": {"q": 1}}
        ledger.record_task(TaskRow.from_params("k", params, added_at=T0 + timedelta(days=1)))
    assert query(db_path, "SELECT key, url, method, domain, added_at FROM tasks") == [
        ("k", "https://b.test/3", "POST", "b.test", T0)
    ]
    assert query(db_path, "SELECT params->'post_payload'->>'q' FROM tasks") == [("1",)]


def test_secrets_in_messages_are_redacted(db_path: Path) -> None:
    message = "proxy http://alice:hunter2@10.0.0.1:8080 failed for https://x.test/?api_key=SECRET"
    with Ledger(db_path) as ledger:
        ledger.record_step(step("a", 0, "ERROR", message=message))
    [(stored,)] = query(db_path, "SELECT message FROM step_runs")
    assert "hunter2" not in stored and "SECRET" not in stored
    assert "http://***@10.0.0.1:8080" in stored and "api_key=***" in stored
    assert not any(b"hunter2" in p.read_bytes() for p in db_path.parent.rglob("*") if p.is_file())


HOLDER = textwrap.dedent(
    """
    import sys, duckdb
    conn = duckdb.connect(sys.argv[1], read_only=sys.argv[2] == "ro")
    print("ready", flush=True)
    sys.stdin.read()  # hold the file until the test closes our stdin
    """
)


@pytest.fixture
def hold_database() -> Iterator[Any]:
    holders: list[subprocess.Popen[str]] = []

    def hold(path: Path, mode: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(path), mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        holders.append(proc)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        return proc

    yield hold
    for proc in holders:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def release(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0


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
    from scrapeflow_dagster.engine.ledger import Ledger, StepRow, TaskRow

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


def status_file(
    key: str,
    url: str,
    *,
    scrape_status: str = "SUCCESS",
    md5: str = "d41d8cd98f00b204e9800998ecf8427e",
    last_run: datetime = T0,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "name": key,
        "params": {"url": url, **extra.pop("params", {})},
        "scrape": {"size": 3, "content": md5, "http_status": 200, "final_url": url},
        "scrape_status": scrape_status,
        "scrape_last_run": str(last_run),
        "scrape_started": str(last_run - timedelta(seconds=1.5)),
        "scrape_attempts": 1,
        **extra,
    }


def write_status(status_dir: Path, data: dict[str, Any]) -> Path:
    path = status_dir / f"{data['name']}.status.json"
    path.write_bytes(orjson.dumps(data))
    return path


def test_rebuild_from_status_dir_makes_duckdb_agree(db_path: Path, tmp_path: Path) -> None:
    status_dir = tmp_path / "status"
    status_dir.mkdir()
    # `same` is already right in DuckDB; `stale` has an older run there; `new` is missing.
    write_status(status_dir, status_file("same", "https://a.test/1"))
    write_status(status_dir, status_file("stale", "https://a.test/2", last_run=T0))
    failed = status_file(
        "new",
        "https://b.test/3",
        scrape_status="ERROR HttpStatusError::HTTP response 404 for https://u:pw@b.test/3",
        scrape_error_kind="permanent",
        scrape_proxy="10.0.0.1:8080",
        params={"post_payload": {"q": 1}},
        parse_status="ERROR ValueError::no table",  # failed before ever writing an output
        parse_last_run=str(T0),
    )
    write_status(status_dir, failed)
    truncated = write_status(status_dir, status_file("trunc", "https://a.test/4"))
    truncated.write_bytes(truncated.read_bytes()[:40])
    foreign = status_dir / "foreign.status.json"
    foreign.write_bytes(orjson.dumps({"hello": "world"}))
    (status_dir / "notes.json").write_bytes(b"not a status file name, ignored")
    with Ledger(db_path, run_id="run") as ledger:
        md5 = "d41d8cd98f00b204e9800998ecf8427e"
        ledger.record_step(StepRow("same", "scrape", "SUCCESS", md5=md5, ended_at=T0))
        old = T0 - timedelta(days=1)
        ledger.record_step(StepRow("stale", "scrape", "SUCCESS", md5=md5, ended_at=old))

    result = rebuild_from_status_dir(status_dir, db_path)

    assert sorted(p.path.name for p in result.errors) == [
        "foreign.status.json",
        "trunc.status.json",
    ]
    assert all(str(path) in message for path, message in result.errors)
    assert (result.files_read, result.tasks_upserted, result.step_rows_inserted) == (3, 3, 3)
    assert query(db_path, "SELECT key, method, domain FROM tasks ORDER BY key") == [
        ("new", "POST", "b.test"),
        ("same", "GET", "a.test"),
        ("stale", "GET", "a.test"),
    ]
    state = query(
        db_path,
        "SELECT key, executor, status, error_class, error_kind, message, http_status, md5, "
        "proxy_host, run_id, ended_at, elapsed_seconds FROM current_state ORDER BY key, executor",
    )
    assert state == [
        ("new", "parse", "ERROR", "ValueError", None, "no table", None, None, None, "rebuild", T0,
         None),
        ("new", "scrape", "ERROR", "HttpStatusError", "permanent",
         "HTTP response 404 for https://***@b.test/3", 404, None, "10.0.0.1:8080", "rebuild", T0,
         1.5),
        ("same", "scrape", "SUCCESS", None, None, None, None, md5, None, "run", T0, None),
        ("stale", "scrape", "SUCCESS", None, None, None, 200, md5, None, "rebuild", T0, 1.5),
    ]  # fmt: skip
    again = rebuild_from_status_dir(status_dir, db_path)
    assert (again.tasks_upserted, again.step_rows_inserted) == (3, 0)


def test_rebuild_raises_when_the_database_stays_locked(db_path: Path, tmp_path: Path) -> None:
    status_dir = tmp_path / "status"
    status_dir.mkdir()
    write_status(status_dir, status_file("a", "https://a.test/"))
    duckdb.connect(str(db_path)).close()
    # This process holding it read-only: DuckDB refuses a read-write open just like a lock
    # held by another process.
    holder = duckdb.connect(str(db_path), read_only=True)
    with pytest.raises(LedgerLockedError):
        rebuild_from_status_dir(status_dir, db_path, lock_timeout_seconds=0.1)
    holder.close()
    assert rebuild_from_status_dir(status_dir, db_path).step_rows_inserted == 1


def test_spool_default_location_and_names(db_path: Path) -> None:
    ledger = Ledger(db_path)
    ledger.record_step(step("a", 0))
    path = ledger.flush()
    assert path is not None and path.parent == db_path.parent / "ledger-spool"
    ts, pid, rest = path.name.split("-", 2)
    assert len(ts) == 20 and pid.isdigit() and rest.endswith(".jsonl")
    shutil.rmtree(ledger.spool_dir)
    assert ledger.sync().pending_files == 0  # a missing spool folder is an empty one
