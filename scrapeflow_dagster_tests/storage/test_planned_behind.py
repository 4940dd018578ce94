"""A run's planned rows written behind its start (`storage/planned/behind.py`, SQLite).

- Through the real `dagster asset materialize`: a home writing 3 planned rows per asset before
  the run (the rest in chunks of 3 while it goes on) and a home writing every row as stock
  Dagster does, given the same chain runs (fresh, forced, then with tasks turned to failures):
  every state, failure, UI answer and run read is the same, storage ids aside (the rows come in
  another order).
- At the storage: chunks written behind a run keep no row that a materialisation or planned
  row stored since the run's planning began supersedes (this run's, another run's, a
  partition given back to missing), and the partitions read as on a stock home where the
  planned rows all came first.
"""

import logging
import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import sqlalchemy as db
from dagster._core.definitions.partitions.subset import DefaultPartitionsSubset
from dagster._core.events import (
    AssetMaterializationPlannedData,
    DagsterEvent,
    DagsterEventType,
    StepMaterializationData,
)
from dagster._core.events.log import EventLogEntry
from dagster._core.instance import RUNLESS_JOB_NAME, RUNLESS_RUN_ID

from scrapeflow_dagster.scaleout.shards import split_keys
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster.storage.batches.buffer import BufferedEventLog
from scrapeflow_dagster.storage.batches.lean_writes import STOCK_WRITES, LeanWrites
from scrapeflow_dagster.storage.planned.rows import per_partition_rows
from scrapeflow_dagster.storage.retention.prune import RetentionPolicy
from scrapeflow_dagster_tests.storage.homes import instance_of, require_postgres_extra
from scrapeflow_dagster_tests.storage.retention_homes import (
    ASSETS,
    ChainHome,
    asset_reads,
    task_rows,
    turn_to_failures,
    write_chain_home,
)
from scrapeflow_dagster_tests.support.postgres import PostgresServer

TASKS = 40
BEFORE_RUN = 3
PLANNED = DagsterEventType.ASSET_MATERIALIZATION_PLANNED.value
# Storage ids, and the status cache's text (which holds them): the rows come in another order.
_ID_READS = ("cache_before", "cache_after", "last_materialization_id", "latest_materialization_ids")
_ID_READS += ("latest_observation_ids",)
_RUN_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.fixture(scope="module")
def site() -> Iterator[SiteThread]:
    with SiteThread(pages=200, page_bytes=2000) as served:
        yield served


def _home(tmp_path: Path, name: str, lean: LeanWrites, url: str | None = None) -> Path:
    return write_chain_home(
        tmp_path / name,
        policy=RetentionPolicy(superseded_grace_seconds=0, run_logs_keep_days=None),
        postgres_url=url,
        lean=lean,
    )


def _urls(backend: str, request: pytest.FixtureRequest, *names: str) -> list[str | None]:
    """A fresh database per home on Postgres (paced: `planned_paced`), none on SQLite."""
    if backend == "sqlite":
        return [None for _ in names]
    require_postgres_extra()
    server: PostgresServer = request.getfixturevalue("postgres")
    return [server.database(f"behind_{name}") for name in names]


def _without_ids(read: dict[str, Any]) -> dict[str, Any]:
    """An asset's reads with storage ids left out, run ids kept (named by position)."""
    kept = {name: value for name, value in read.items() if name not in _ID_READS}
    kept["attempts"] = {k: run_id for k, (run_id, _id) in read["attempts"].items()}
    planned = read["asset_latest_planned"]
    kept["asset_latest_planned"] = planned[1] if planned else None
    kept["ui_detail"] = {
        partition: {**shown, "materialization": shown["materialization"] is not None}
        for partition, shown in read["ui_detail"].items()
    }
    return kept


def _state_reads(home: Path, keys: list[str]) -> str:
    with instance_of(home) as instance:
        position = {run.run_id: i for i, run in enumerate(reversed(instance.get_runs()))}
        found = {
            asset: [
                _without_ids(asset_reads(instance, asset, keys, rebuild=rebuild))
                for rebuild in (False, True)
            ]
            for asset in ASSETS
        }
        runs = [(run.status.value, sorted(run.tags.items())) for run in instance.get_runs()]
    text = repr((found, runs))
    return _RUN_ID.sub(lambda hit: f"run-{position.get(hit.group(0), '?')}", text)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_planned_rows_behind_the_run_read_as_on_a_stock_home(
    backend: str, site: SiteThread, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    urls = _urls(backend, request, "behind", "stock")
    tag = f"behind-{backend}-"
    rows = task_rows(site, TASKS, tag=tag)
    behind = ChainHome(
        _home(tmp_path, "behind", LeanWrites(planned_rows_before_run=BEFORE_RUN), urls[0]),
        tmp_path / "behind-data",
        rows,
    )
    stock = ChainHome(
        _home(tmp_path, "stock", STOCK_WRITES, urls[1]), tmp_path / "stock-data", rows
    )
    homes = (behind, stock)
    for forced in (False, True):
        for chain in homes:
            chain.run(forced=forced, cwd=tmp_path, one_at_a_time=True)
    turned = turn_to_failures(site, behind.keys, tag)
    for chain in homes:
        chain.run(forced=True, cwd=tmp_path, one_at_a_time=True)

    behind_reads = _state_reads(behind.home, behind.keys)
    assert turned and "FAILED" in behind_reads
    # The FAILED partitions above are those of the runs' planned rows past the first
    # BEFORE_RUN per asset too: written behind the runs' starts, before their ends.
    assert behind_reads == _state_reads(stock.home, stock.keys)


def _subset_event(run_id: str, asset: str, keys: list[str]) -> EventLogEntry:
    """A run's planned event for `keys` of `asset`, as Dagster sends one at run creation."""
    data = AssetMaterializationPlannedData(
        dg.AssetKey(asset), partitions_subset=DefaultPartitionsSubset(set(keys))
    )
    return _entry(run_id, "job", DagsterEventType.ASSET_MATERIALIZATION_PLANNED, data)


def _entry(run_id: str, job: str, kind: DagsterEventType, data: Any) -> EventLogEntry:
    event = DagsterEvent(event_type_value=kind.value, job_name=job, event_specific_data=data)
    return EventLogEntry(
        user_message="",
        level=logging.DEBUG,
        job_name=job,
        run_id=run_id,
        error_info=None,
        timestamp=time.time(),
        step_key=None,
        dagster_event=event,
    )


def _planned_one(run_id: str, job: str, asset: str, key: str) -> EventLogEntry:
    data = AssetMaterializationPlannedData(dg.AssetKey(asset), partition=key)
    return _entry(run_id, job, DagsterEventType.ASSET_MATERIALIZATION_PLANNED, data)


def _materialised(run_id: str, asset: str, key: str) -> EventLogEntry:
    data = StepMaterializationData(dg.AssetMaterialization(asset_key=asset, partition=key))
    return _entry(run_id, "job", DagsterEventType.ASSET_MATERIALIZATION, data)


@contextmanager
def _batched_storage(home: Path) -> Iterator[Any]:
    """The batched event log of `home` (SQLite or Postgres), open."""
    with instance_of(home) as instance:
        storage = instance.event_log_storage
        assert isinstance(storage, BufferedEventLog)
        yield storage


def _partition_reads(storage: Any, asset: str) -> tuple[Any, Any]:
    key = dg.AssetKey(asset)
    attempts = storage.get_latest_asset_partition_materialization_attempts_without_materializations(
        key
    )
    materialised = storage.get_latest_storage_id_by_partition(
        key, DagsterEventType.ASSET_MATERIALIZATION
    )
    return {k: run_id for k, (run_id, _id) in attempts.items()}, sorted(materialised)


def _planned_of(storage: Any, run_id: str) -> set[str]:
    with storage.index_connection() as conn:
        found = conn.execute(
            db.text(
                "SELECT partition FROM event_logs WHERE dagster_event_type = :kind"
                " AND run_id = :run"
            ),
            {"kind": PLANNED, "run": run_id},
        )
        return {partition for (partition,) in found}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_chunk_behind_the_run_keeps_no_row_a_newer_one_supersedes(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    keys = [f"k{n:02d}" for n in range(12)]
    urls = _urls(backend, request, "chunk_behind", "chunk_stock")
    homes = {
        "behind": _home(
            tmp_path, "behind", LeanWrites(planned_rows_before_run=BEFORE_RUN), urls[0]
        ),
        "stock": _home(tmp_path, "stock", STOCK_WRITES, urls[1]),
    }
    found = {}
    for name, home in homes.items():
        with _batched_storage(home) as storage:
            chunks = list(
                per_partition_rows(storage, _subset_event("run-a", "scrape", keys), chunk=3)
            )
            order = [row["partition"] for _events, rows in chunks for row in rows]
            first, rest = chunks[0], chunks[1:]
            storage._write_rows(*first)
            since = storage._planned_since()
            later = [order[4], order[6], order[8], order[10]]
            newer = [
                _materialised("run-a", "scrape", later[0]),  # this run, before its chunk
                _planned_one(RUNLESS_RUN_ID, RUNLESS_JOB_NAME, "scrape", later[1]),  # given back
                _materialised("run-b", "scrape", later[2]),  # another run's
                _planned_one("run-b", "job", "scrape", later[3]),  # another run's plan
            ]
            if name == "stock":  # stock order: every planned row of the run first
                for events, rows in rest:
                    storage._write_rows(events, rows)
            for event in newer:
                storage.store_event(event)
            storage.flush()
            if name == "behind":
                for events, rows in rest:
                    storage._write_planned_behind(events, rows, since)
            found[name] = _partition_reads(storage, "scrape")
            if name == "behind":
                assert _planned_of(storage, "run-a") == set(keys) - set(later)
    attempts, materialised = found["behind"]
    assert materialised == sorted([later[0], later[2]])
    assert attempts[later[1]] == RUNLESS_RUN_ID and attempts[later[3]] == "run-b"
    assert found["behind"] == found["stock"]


def _ui_latest_run(storage: Any, asset: str, key: str) -> str | None:
    """The run the UI's partition detail shows as the latest, where it is not the latest
    materialisation's (`retention_homes._ui_partition_detail`)."""
    planned = storage.get_latest_planned_materialization_info(dg.AssetKey(asset), key)
    done = storage.get_latest_storage_id_by_partition(
        dg.AssetKey(asset), DagsterEventType.ASSET_MATERIALIZATION
    )
    if planned is None:
        return None
    ids = {planned.run_id}
    if key in done:
        record = storage.get_event_records(
            dg.EventRecordsFilter(
                event_type=DagsterEventType.ASSET_MATERIALIZATION,
                asset_key=dg.AssetKey(asset),
                storage_ids=[done[key]],
            )
        )[0]
        ids.discard(record.run_id)
    return next(iter(ids), None)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_materialisation_before_its_chunk_leaves_no_older_run_as_the_latest(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # Run a's last key stays planned as the asset's newest planned row once materialised. Run
    # b materialises that key before the chunk holding its planned row is written (the thread
    # behind the run lagging, as under load): the chunk's row is superseded, and the UI's
    # latest run of the partition must be run b's, as where the planned rows came first.
    keys = [f"k{n:02d}" for n in range(12)]
    last = sorted(keys)[-1]
    urls = _urls(backend, request, "latest_behind", "latest_all_before", "latest_stock")
    homes = {
        "behind": _home(
            tmp_path, "behind", LeanWrites(planned_rows_before_run=BEFORE_RUN), urls[0]
        ),
        "all-before": _home(
            tmp_path, "all-before", LeanWrites(planned_rows_before_run=None), urls[1]
        ),
        "stock": _home(tmp_path, "stock", STOCK_WRITES, urls[2]),
    }
    found = {}
    for name, home in homes.items():
        with _batched_storage(home) as storage:
            for events, rows in per_partition_rows(
                storage, _subset_event("run-a", "scrape", keys), chunk=3
            ):
                storage._write_rows(events, rows)
            for key in sorted(keys):
                storage.store_event(_materialised("run-a", "scrape", key))
            storage.flush()
            first, *rest = per_partition_rows(
                storage, _subset_event("run-b", "scrape", keys), chunk=3
            )
            storage._write_rows(*first)
            since = storage._planned_since()
            if name != "behind":
                for events, rows in rest:
                    storage._write_rows(events, rows)
            storage.store_event(_materialised("run-b", "scrape", last))
            storage.flush()
            if name == "behind":
                for events, rows in rest:
                    storage._write_planned_behind(events, rows, since)
            found[name] = {key: _ui_latest_run(storage, "scrape", key) for key in keys}
            found[name]["reads"] = _partition_reads(storage, "scrape")
    assert found["stock"][last] is None  # run b's materialisation, run b's plan
    assert found["behind"] == found["all-before"] == found["stock"]


def test_a_run_end_waits_for_its_planned_rows(tmp_path: Path) -> None:
    keys = [f"k{n:03d}" for n in range(200)]
    home = _home(tmp_path, "behind", LeanWrites(planned_rows_before_run=BEFORE_RUN))
    with instance_of(home) as instance:
        storage = instance.event_log_storage
        for asset in ("scrape", "validation"):
            storage.store_event(_subset_event("run-a", asset, keys))
        storage.store_event(_entry("run-a", "job", DagsterEventType.RUN_FAILURE, None))
        with closing(sqlite3.connect(home / "history" / "runs" / "index.db")) as index:
            counts = dict(
                index.execute(
                    "SELECT asset_key, count(*) FROM event_logs WHERE dagster_event_type = ?"
                    " GROUP BY asset_key",
                    (PLANNED,),
                ).fetchall()
            )
    assert counts == {'["scrape"]': len(keys), '["validation"]': len(keys)}


@pytest.mark.parametrize("before_run", [BEFORE_RUN, None], ids=["behind", "all-before"])
def test_planned_rows_are_written_in_the_order_the_shards_take_their_keys(
    tmp_path: Path, before_run: int | None
) -> None:
    # A materialisation deletes its partition's planned row: rows written in the shards' order
    # are deleted page by page, not one page of the table and of each index per row.
    keys = [f"host-page-{n}-{n * 7919 % 1000:03d}" for n in range(150)]
    home = _home(tmp_path, "home", LeanWrites(planned_rows_before_run=before_run))
    with instance_of(home) as instance:
        storage = instance.event_log_storage
        storage.store_event(_subset_event("run-a", "scrape", keys))
        storage.store_event(_entry("run-a", "job", DagsterEventType.RUN_FAILURE, None))
        with closing(sqlite3.connect(home / "history" / "runs" / "index.db")) as index:
            written = [
                partition
                for (partition,) in index.execute(
                    "SELECT partition FROM event_logs WHERE dagster_event_type = ? ORDER BY id",
                    (PLANNED,),
                )
            ]
    shards_order = [key for shard in split_keys(keys, 2) for key in shard]
    assert written == shards_order != keys  # "page-10" before "page-2", as the shards run them
