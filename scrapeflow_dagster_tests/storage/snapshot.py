"""What Dagster reads back about an asset, in a form two homes can be compared in.

Run ids, timestamps and data versions differ between two homes running the same commands;
runs are named by their position (0 for the oldest) and the rest is left out. Event ids are
kept: the same commands give the same ids in the index shard when the rows are the same. A
run's planned rows of one asset are compared in partition order (`planned_in_key_order`): the
batched storages write them sorted, as the run's shards take them; stock Dagster in the order
of a set of keys.
"""

import sqlite3
from collections import Counter
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import Any, TypeVar

import dagster as dg
from dagster._core.events import DagsterEventType

from scrapeflow_dagster_tests.storage.partitioned_defs import keys_partitions_def

MATERIALIZATION = DagsterEventType.ASSET_MATERIALIZATION
PLANNED = DagsterEventType.ASSET_MATERIALIZATION_PLANNED
ASSET_EVENT_TYPES = {MATERIALIZATION, PLANNED}
RECORDS_LIMIT = 10_000
Row = TypeVar("Row", bound=tuple[Any, ...])


def planned_in_key_order(
    rows: Sequence[Row], *, type_at: int, partition_at: int, id_at: int | None = None
) -> list[Row]:
    """`rows` with each block of consecutive planned rows that differ only in partition (and
    id) in partition order, the ids (field `id_at`) left where they were."""
    out: list[Row] = []
    block: list[Row] = []

    def rest(row: Row) -> tuple[Any, ...]:
        return tuple(v for i, v in enumerate(row) if i not in (partition_at, id_at))

    def flush() -> None:
        ordered = sorted(block, key=lambda row: row[partition_at] or "")
        for place, row in zip(block, ordered, strict=True):
            if id_at is not None:
                row = type(row)((*row[:id_at], place[id_at], *row[id_at + 1 :]))
            out.append(row)
        block.clear()

    for row in rows:
        if block and (row[type_at] != PLANNED.value or rest(row) != rest(block[0])):
            flush()
        if row[type_at] == PLANNED.value:
            block.append(row)
        else:
            out.append(row)
    flush()
    return out


def run_positions(instance: dg.DagsterInstance) -> dict[str, int]:
    """Each run id and its position, oldest first."""
    return {run.run_id: i for i, run in enumerate(reversed(instance.get_runs()))}


def states(instance: dg.DagsterInstance, asset: str, keys: list[str]) -> dict[str, str | None]:
    """`get_status_by_partition` of `keys`, by status name (None: missing)."""
    found = instance.get_status_by_partition(dg.AssetKey(asset), keys, keys_partitions_def) or {}
    return {key: found[key].value if found.get(key) else None for key in keys}


def asset_records(
    instance: dg.DagsterInstance, asset: str, event_type: DagsterEventType
) -> list[dg.EventLogRecord]:
    """The asset's events of `event_type` from the index shard, oldest first."""
    records = instance.get_event_records(
        dg.EventRecordsFilter(event_type, asset_key=dg.AssetKey(asset)),
        limit=RECORDS_LIMIT,
        ascending=True,
    )
    assert len(records) < RECORDS_LIMIT
    return list(records)


def latest_materializations(
    instance: dg.DagsterInstance, asset: str
) -> dict[str, tuple[int, dict[str, Any]]]:
    """Per partition: the run position and metadata of its latest materialisation."""
    positions = run_positions(instance)
    latest: dict[str, tuple[int, dict[str, Any]]] = {}
    for record in asset_records(instance, asset, MATERIALIZATION):
        materialization = record.asset_materialization
        assert materialization is not None and materialization.partition is not None
        metadata = {name: value.value for name, value in materialization.metadata.items()}
        latest[materialization.partition] = (positions[record.run_id], metadata)
    return latest


def run_shard_asset_events(
    instance: dg.DagsterInstance, run_id: str
) -> list[tuple[str, str | None, str | None]]:
    """The run's asset events as its own shard holds them, in id order."""
    records = instance.get_records_for_run(run_id, limit=RECORDS_LIMIT).records
    assert len(records) < RECORDS_LIMIT
    events = []
    for record in records:
        dagster_event = record.event_log_entry.dagster_event
        if dagster_event is not None and dagster_event.event_type in ASSET_EVENT_TYPES:
            asset_key = dagster_event.asset_key.to_string() if dagster_event.asset_key else None
            events.append((dagster_event.event_type_value, asset_key, dagster_event.partition))
    return planned_in_key_order(events, type_at=0, partition_at=2)


def index_shard_rows(home: Path, positions: dict[str, int]) -> dict[str, Any]:
    """The index shard's rows that Dagster reads for assets, without run ids and timestamps."""
    with sqlite3.connect(home / "history" / "runs" / "index.db") as db:
        events = [
            (event_id, positions.get(run_id, run_id), event_type, asset_key, partition, step)
            for event_id, run_id, event_type, asset_key, partition, step in db.execute(
                "SELECT id, run_id, dagster_event_type, asset_key, partition, step_key"
                " FROM event_logs ORDER BY id"
            )
        ]
        tags = db.execute(
            "SELECT event_id, asset_key, key FROM asset_event_tags ORDER BY id"
        ).fetchall()
        asset_keys = [
            (asset_key, positions.get(last_run_id, last_run_id), has_last, has_timestamp, cached)
            for asset_key, last_run_id, has_last, has_timestamp, cached in db.execute(
                "SELECT asset_key, last_run_id, last_materialization IS NOT NULL,"
                " last_materialization_timestamp IS NOT NULL, cached_status_data"
                " FROM asset_keys ORDER BY asset_key"
            )
        ]
    events = planned_in_key_order(events, type_at=2, partition_at=4, id_at=0)
    return {"events": events, "tags": tags, "asset_keys": asset_keys}


def asset_snapshot(
    instance: dg.DagsterInstance, home: Path, asset: str, keys: list[str]
) -> dict[str, Any]:
    """Everything the tests compare about `asset` between two homes."""
    positions = run_positions(instance)
    materializations = asset_records(instance, asset, MATERIALIZATION)
    entry = instance.get_asset_records([dg.AssetKey(asset)])[0].asset_entry
    last = entry.last_materialization_record
    return {
        "states": Counter(states(instance, asset, keys).values()),
        "materializations": len(materializations),
        "planned": len(asset_records(instance, asset, PLANNED)),
        "latest": latest_materializations(instance, asset),
        "last_run": positions[entry.last_run_id or ""],
        "last_materialization": (
            (last.storage_id, last.partition_key) if last is not None else None
        ),
        "last_materialization_is_latest": last is not None
        and last.storage_id == materializations[-1].storage_id,
        "run_shards": {
            position: run_shard_asset_events(instance, run_id)
            for run_id, position in positions.items()
        },
    }


def postgres_rows(postgres_url: str, positions: dict[str, int]) -> dict[str, Any]:
    """The rows Dagster reads for assets from a Postgres event log, without ids, run ids and
    timestamps: one table holds every process's events, whose interleaving (hence ids) differs
    between two homes; asset events of a run come in one order from each process."""
    import psycopg2

    asset_types = tuple(event_type.value for event_type in ASSET_EVENT_TYPES)
    dsn = postgres_url.replace("postgresql+psycopg2://", "postgresql://", 1)
    with closing(psycopg2.connect(dsn)) as db, db.cursor() as cursor:
        cursor.execute(
            "SELECT run_id, dagster_event_type, asset_key, partition, step_key FROM event_logs"
            " WHERE dagster_event_type IN %s ORDER BY id",
            (asset_types,),
        )
        events = planned_in_key_order(
            [(positions[run_id], *rest) for run_id, *rest in cursor.fetchall()],
            type_at=1,
            partition_at=3,
        )
        cursor.execute(
            "SELECT t.asset_key, t.key, e.partition FROM asset_event_tags t"
            " JOIN event_logs e ON e.id = t.event_id ORDER BY t.id"
        )
        tags = cursor.fetchall()
        cursor.execute(
            "SELECT asset_key, last_run_id, last_materialization IS NOT NULL,"
            " last_materialization_timestamp IS NOT NULL, cached_status_data"
            " FROM asset_keys ORDER BY asset_key"
        )
        asset_keys = [
            (asset_key, positions.get(last_run_id, last_run_id), *rest)
            for asset_key, last_run_id, *rest in cursor.fetchall()
        ]
    return {"events": events, "tags": tags, "asset_keys": asset_keys}


def schema(path: Path) -> dict[str, Any]:
    """A SQLite database's tables and indexes (their SQL), alembic revision and journal mode."""
    with closing(sqlite3.connect(path)) as db:
        return {
            "objects": db.execute(
                "SELECT type, name, sql FROM sqlite_master ORDER BY name"
            ).fetchall(),
            "revision": db.execute("SELECT version_num FROM alembic_version").fetchall(),
            "journal_mode": db.execute("PRAGMA journal_mode").fetchone(),
        }
