"""The Ledger: rows spooled in batches, synced into DuckDB, upserted, redacted, named."""

import shutil
from datetime import timedelta
from pathlib import Path

from scrapeflow_dagster.engine.history import Ledger, StepRow, TaskRow
from scrapeflow_dagster_tests.engine.history.helpers import T0, query, spool_files, step


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


def test_spool_default_location_and_names(db_path: Path) -> None:
    ledger = Ledger(db_path)
    ledger.record_step(step("a", 0))
    path = ledger.flush()
    assert path is not None and path.parent == db_path.parent / "ledger-spool"
    ts, pid, rest = path.name.split("-", 2)
    assert len(ts) == 20 and pid.isdigit() and rest.endswith(".jsonl")
    shutil.rmtree(ledger.spool_dir)
    assert ledger.sync().pending_files == 0  # a missing spool folder is an empty one


def test_task_rows_keep_credentials_out_of_duckdb(db_path: Path) -> None:
    params = {
        "url": "https://bob:hunter2@x.test/a?api_key=SECRET&page=2",
        "headers": {"Authorization": "Bearer SECRET-T", "Accept": "text/html"},
        "cookies": {"sid": "SECRET-C"},
        "post_payload": {"user": "bob", "password": "hunter2", "items": [{"token": "SECRET"}]},
    }
    with Ledger(db_path) as ledger:
        ledger.record_task(TaskRow.from_params("k", params, added_at=T0))
    [(url, stored)] = query(db_path, "SELECT url, params::VARCHAR FROM tasks")
    assert url == "https://***@x.test/a?api_key=***&page=2"
    assert "hunter2" not in stored and "SECRET" not in stored, stored
    # What is not a credential stays queryable: names, other headers, other fields.
    assert query(
        db_path,
        "SELECT params->'headers'->>'Accept', params->'cookies'->>'sid',"
        " params->'post_payload'->>'user' FROM tasks",
    ) == [("text/html", "***", "bob")]
    assert not any(b"hunter2" in p.read_bytes() for p in db_path.parent.rglob("*") if p.is_file())
