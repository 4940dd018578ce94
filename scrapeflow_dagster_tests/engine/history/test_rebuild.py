"""Rebuild: DuckDB made to agree with status files, skipping unusable ones by name."""

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pytest

from scrapeflow_dagster.engine.history import (
    Ledger,
    LedgerLockedError,
    StepRow,
    rebuild_from_status_dir,
)
from scrapeflow_dagster_tests.engine.history.helpers import T0, query


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
