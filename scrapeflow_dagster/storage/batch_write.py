"""Write a batch of asset events with the rows Dagster's SQLite event log writes for each one.

Stock `SqliteEventLogStorage.store_event` does, per asset event: insert the event in the run's
shard (one engine, one commit), insert it again in the index shard, insert its indexed tags,
check the `asset_keys` columns with `db.inspect`, and insert-or-update the asset's `asset_keys`
row (another commit). Here a batch takes one transaction per shard and the `asset_keys` row is
written once per asset key with the values the last of those updates would have left.
Every row comes from Dagster's own helpers, so the values are the ones stock Dagster writes.
"""

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy.exc as db_exc
from dagster._core.events import DagsterEventType
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.schema import AssetKeyTable, SqlEventLogStorageTable
from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SqliteEventLogStorage,
)
from sqlalchemy.engine import Connection

Row = dict[str, Any]
# The asset events for which Dagster's `_get_asset_entry_values` returns values.
VALUE_SETTING_EVENT_TYPES = frozenset(
    {
        DagsterEventType.ASSET_MATERIALIZATION,
        DagsterEventType.ASSET_MATERIALIZATION_PLANNED,
        DagsterEventType.ASSET_OBSERVATION,
    }
)


def rows_by_run(events: Sequence[EventLogEntry], rows: Sequence[Row]) -> dict[str, list[Row]]:
    """The event rows grouped by run id, each group in the order the events came."""
    grouped: dict[str, list[Row]] = {}
    for event, row in zip(events, rows, strict=True):
        grouped.setdefault(event.run_id, []).append(row)
    return grouped


def latest_positions_by_asset_key(
    events: Sequence[EventLogEntry],
) -> dict[str, tuple[int | None, int | None, int | None]]:
    """For each asset key: the positions of its last materialisation, of its last
    materialisation or planned event, and of its last event that sets `asset_keys` values
    (None without one).

    Successive updates of an `asset_keys` row equal one update with the merged values, later
    wins: a materialisation sets `last_materialization`, `last_run_id` and the timestamp, a
    planned event `last_run_id` and the timestamp, an observation the timestamp, any other asset
    event nothing; so the last event to set each column is among these three.
    """
    latest: dict[str, tuple[int | None, int | None, int | None]] = {}
    for position, event in enumerate(events):
        dagster_event = event.get_dagster_event()
        key = dagster_event.asset_key.to_string()  # type: ignore[union-attr]
        last_materialization, last_run_setting, last_setting = latest.get(key, (None, None, None))
        if dagster_event.is_step_materialization:
            last_materialization = position
        if dagster_event.is_step_materialization or dagster_event.is_asset_materialization_planned:
            last_run_setting = position
        if dagster_event.event_type in VALUE_SETTING_EVENT_TYPES:
            last_setting = position
        latest[key] = (last_materialization, last_run_setting, last_setting)
    return latest


def write_run_shard(storage: SqliteEventLogStorage, run_id: str, rows: Sequence[Row]) -> None:
    """Insert `rows` into the run's shard in one transaction, in order."""
    # `_connect` is the stock connection without the flush hook of the batched storage.
    with storage._connect(run_id) as conn:
        conn.execute(SqlEventLogStorageTable.insert(), list(rows))


def write_index_shard(
    storage: SqliteEventLogStorage, events: Sequence[EventLogEntry], rows: Sequence[Row]
) -> list[int]:
    """Mirror the events into the index shard with their tags and `asset_keys` rows, in one
    transaction; returns the index shard's event ids in the order of `events`."""
    with storage._connect(INDEX_SHARD_NAME) as conn:
        inserted = conn.execute(
            SqlEventLogStorageTable.insert().returning(
                SqlEventLogStorageTable.c.id, sort_by_parameter_order=True
            ),
            list(rows),
        )
        event_ids = list(inserted.scalars())
        storage._store_asset_event_tags(conn, events, event_ids)
        has_index_cols = storage._has_asset_key_index_cols_on_connection(conn)
        for asset_key, positions in latest_positions_by_asset_key(events).items():
            values = entry_values(storage, events, event_ids, positions, has_index_cols)
            _upsert_asset_key(conn, asset_key, values)
    return event_ids


def entry_values(
    storage: SqlEventLogStorage,
    events: Sequence[EventLogEntry],
    event_ids: Sequence[int],
    positions: Sequence[int | None],
    has_index_cols: bool,
) -> dict[str, Any]:
    """The merged `asset_keys` values of the events at `positions`, the later one winning."""
    values: dict[str, Any] = {}
    for position in sorted({p for p in positions if p is not None}):
        event, event_id = events[position], event_ids[position]
        values.update(storage._get_asset_entry_values(event, event_id, has_index_cols))
    return values


def _upsert_asset_key(conn: Connection, asset_key: str, values: Mapping[str, Any]) -> None:
    # As stock `_store_asset_event`: insert, or update the existing row.
    if not values:
        return
    try:
        conn.execute(AssetKeyTable.insert().values(asset_key=asset_key, **values))
    except db_exc.IntegrityError:
        conn.execute(
            AssetKeyTable.update().values(**values).where(AssetKeyTable.c.asset_key == asset_key)
        )
