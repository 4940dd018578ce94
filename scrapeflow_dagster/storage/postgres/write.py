"""Write events to Postgres in one transaction with the rows dagster-postgres writes for each.

Stock `PostgresEventLogStorage.store_event` does, per event, on a new connection (NullPool):
insert the event row and send a NOTIFY (autocommit), then for an asset event insert its indexed
tags and upsert its `asset_keys` row in a second transaction. Here a batch of events takes one
pooled connection and one transaction: a multi-row insert returning the ids in order, the tags
in one insert, one `asset_keys` upsert per asset key (in key order, so two writers never wait
for each other's rows in opposite orders) with the values the last of the stock upserts would
have left, and the NOTIFYs in one statement.

The transaction first takes a transaction-level advisory lock, so batches of all processes
allocate and commit their ids one after the other: a reader that polls for ids above the last
one it saw (Dagster's `SqlPollingEventWatcher`, the UI's run logs) never sees a later id commit
before an earlier one.
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as db
from dagster._core.events import ASSET_EVENTS
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.migration import ASSET_KEY_INDEX_COLS
from dagster._core.storage.event_log.schema import AssetKeyTable, SqlEventLogStorageTable
from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage
from dagster_postgres.event_log.event_log import CHANNEL_NAME
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection, Engine

from scrapeflow_dagster.storage.batches.write import (
    AfterInsert,
    entry_values,
    latest_positions_by_asset_key,
    store_asset_event_tags,
)

# Any fixed 64-bit number: the lock every batched writer of this database's event log takes.
EVENT_LOG_LOCK_KEY = 0x5C12A9F10E7E1106


def write_events(
    storage: SqlEventLogStorage,
    engine: Engine,
    events: Sequence[EventLogEntry],
    rows: Sequence[dict[str, Any]] | None = None,
    after_insert: AfterInsert | None = None,
    *,
    asset_rows: bool = True,
) -> list[int]:
    """Store `events` (any run's events, in order) in one transaction; returns their ids.

    `rows` are their event rows when the caller made them (default: `_event_to_row`);
    `after_insert` runs in the transaction once they are inserted. Asset
    events get their indexed tags and `asset_keys` rows as stock dagster-postgres writes
    them (not with `asset_rows` False: a run's planned rows written while it goes on, whose
    `asset_keys` values its first ones set, and a later materialisation may have changed);
    the caller stores asset check events' extra rows (they need the committed ids).
    """
    if rows is None:
        rows = [storage._event_to_row(event) for event in events]
    # As stock `store_event`: the asset events among them (an ASSET_WIPED names its asset too,
    # but gets no `asset_keys` row nor tags).
    asset_events = [
        (event, position)
        for position, event in enumerate(events)
        if event.dagster_event is not None
        and event.dagster_event.event_type in ASSET_EVENTS
        and event.dagster_event.asset_key is not None
    ]
    # Read before the transaction: the first call queries the database.
    has_index_cols = (
        storage.has_secondary_index(ASSET_KEY_INDEX_COLS) if asset_events and asset_rows else False
    )
    with engine.connect() as autocommit:
        conn = autocommit.execution_options(isolation_level="READ COMMITTED")
        with conn.begin():
            conn.execute(db.select(db.func.pg_advisory_xact_lock(EVENT_LOG_LOCK_KEY)))
            inserted = conn.execute(
                SqlEventLogStorageTable.insert().returning(
                    SqlEventLogStorageTable.c.id, sort_by_parameter_order=True
                ),
                rows,
            )
            event_ids = [int(event_id) for event_id in inserted.scalars()]
            if after_insert is not None:
                after_insert(conn, rows, event_ids)
            if asset_events and asset_rows:
                _write_asset_rows(storage, conn, asset_events, rows, event_ids, has_index_cols)
            _notify(conn, events, event_ids)
    return event_ids


def _write_asset_rows(
    storage: SqlEventLogStorage,
    conn: Connection,
    asset_events: Sequence[tuple[EventLogEntry, int]],
    rows: Sequence[dict[str, Any]],
    event_ids: Sequence[int],
    has_index_cols: bool,
) -> None:
    events = [event for event, _ in asset_events]
    ids = [event_ids[position] for _, position in asset_events]
    store_asset_event_tags(storage, conn, events, ids)
    latest = latest_positions_by_asset_key([rows[position] for _, position in asset_events])
    for asset_key in sorted(latest):
        values = entry_values(storage, events, ids, latest[asset_key], has_index_cols)
        _upsert_asset_key(conn, asset_key, values)


def _upsert_asset_key(conn: Connection, asset_key: str, values: dict[str, Any]) -> None:
    # As stock `_store_asset_event`: insert or update; without values only make sure it exists.
    query = postgresql.insert(AssetKeyTable).values(asset_key=asset_key, **values)
    if values:
        query = query.on_conflict_do_update(index_elements=[AssetKeyTable.c.asset_key], set_=values)
    else:
        query = query.on_conflict_do_nothing()
    conn.execute(query)


def _notify(conn: Connection, events: Sequence[EventLogEntry], event_ids: Sequence[int]) -> None:
    # dagster-postgres 0.29 no longer listens (its watcher polls) but still sends one NOTIFY per
    # event "to support version skew" with older processes on the same database: keep them, in
    # one statement; Postgres delivers them at commit.
    payloads = [
        f"{event.run_id}_{event_id}" for event, event_id in zip(events, event_ids, strict=True)
    ]
    conn.execute(
        db.text(
            "SELECT pg_notify(:channel, payload) FROM unnest(CAST(:payloads AS text[])) payload"
        ),
        {"channel": CHANNEL_NAME, "payloads": payloads},
    )
