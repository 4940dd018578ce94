"""Write a batch of asset events with the rows Dagster's SQLite event log writes for each one.

Stock `SqliteEventLogStorage.store_event` does, per asset event: insert the event in the run's
shard (one engine, one commit), insert it again in the index shard, insert its indexed tags,
check the `asset_keys` columns with `db.inspect`, and insert-or-update the asset's `asset_keys`
row (another commit). Here a batch takes one transaction per shard and the `asset_keys` row is
written once per asset key with the values the last of those updates would have left.
Every row comes from Dagster's own helpers, so the values are the ones stock Dagster writes.
"""

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import dagster as dg
import sqlalchemy as db
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
# The same, as the strings events carry (`event_type` builds an enum member on each call).
MATERIALIZATION_TYPE = DagsterEventType.ASSET_MATERIALIZATION.value
PLANNED_TYPE = DagsterEventType.ASSET_MATERIALIZATION_PLANNED.value
# The newest event id (the storages read it before and while a run's planned rows go in).
MAX_EVENT_ID = db.text("SELECT max(id) FROM event_logs")
_VALUE_SETTING = frozenset(kind.value for kind in VALUE_SETTING_EVENT_TYPES)


@functools.lru_cache(maxsize=4096)
def asset_key_string(asset_key: dg.AssetKey) -> str:
    """`asset_key.to_string()`, kept: a batch names a few keys thousands of times."""
    return asset_key.to_string()


def rows_by_run(
    events: Sequence[EventLogEntry], rows: Sequence[Row]
) -> dict[str, tuple[list[EventLogEntry], list[Row]]]:
    """The events and their rows grouped by run id, each group in the order the events came."""
    grouped: dict[str, tuple[list[EventLogEntry], list[Row]]] = {}
    for event, row in zip(events, rows, strict=True):
        run_events, run_rows = grouped.setdefault(event.run_id, ([], []))
        run_events.append(event)
        run_rows.append(row)
    return grouped


def latest_positions_by_asset_key(
    rows: Sequence[Row],
) -> dict[str, tuple[int | None, int | None, int | None]]:
    """For each asset key of the asset events' `rows` (as Dagster's `_event_to_row` makes
    them): the positions of its last materialisation, of its last materialisation or planned
    event, and of its last event that sets `asset_keys` values (None without one).

    Successive updates of an `asset_keys` row equal one update with the merged values, later
    wins: a materialisation sets `last_materialization`, `last_run_id` and the timestamp, a
    planned event `last_run_id` and the timestamp, an observation the timestamp, any other asset
    event nothing; so the last event to set each column is among these three.
    """
    latest: dict[str, tuple[int | None, int | None, int | None]] = {}
    for position, row in enumerate(rows):
        key, kind = row["asset_key"], row["dagster_event_type"]
        last_materialization, last_run_setting, last_setting = latest.get(key, (None, None, None))
        if kind == MATERIALIZATION_TYPE:
            last_materialization = position
        if kind in (MATERIALIZATION_TYPE, PLANNED_TYPE):
            last_run_setting = position
        if kind in _VALUE_SETTING:
            last_setting = position
        latest[key] = (last_materialization, last_run_setting, last_setting)
    return latest


def write_run_shard(storage: SqliteEventLogStorage, run_id: str, rows: Sequence[Row]) -> None:
    """Insert `rows` into the run's shard in one transaction, in order."""
    # `_connect` is the stock connection without the flush hook of the batched storage.
    with storage._connect(run_id) as conn:
        conn.execute(SqlEventLogStorageTable.insert(), list(rows))


# Run in a batch's transaction after its rows are inserted: (connection, rows, their ids).
# What it returns is not used (the delete of superseded planned rows returns its count).
AfterInsert = Callable[[Connection, Sequence[Row], Sequence[int]], object]


def write_index_shard(
    storage: SqliteEventLogStorage,
    events: Sequence[EventLogEntry],
    rows: Sequence[Row],
    after_insert: AfterInsert | None = None,
) -> list[int]:
    """Mirror the events into the index shard with their tags and `asset_keys` rows, in one
    transaction (with `after_insert`, e.g. `lean_writes.delete_superseded_planned`); returns
    the index shard's event ids in the order of `events`."""
    try:
        return _write_index_shard(storage, events, rows, _insert_numbered_in_order, after_insert)
    except _NotNumberedInOrder:  # rolled back: insert them one by one, as stock does
        return _write_index_shard(storage, events, rows, _insert_one_by_one, after_insert)


def _write_index_shard(
    storage: SqliteEventLogStorage,
    events: Sequence[EventLogEntry],
    rows: Sequence[Row],
    insert: Callable[[Connection, Sequence[Row]], list[int]],
    after_insert: AfterInsert | None,
) -> list[int]:
    with storage._connect(INDEX_SHARD_NAME) as conn:
        event_ids = insert(conn, rows)
        if after_insert is not None:
            after_insert(conn, rows, event_ids)
        store_asset_event_tags(storage, conn, events, event_ids)
        has_index_cols = storage._has_asset_key_index_cols_on_connection(conn)
        for asset_key, positions in latest_positions_by_asset_key(rows).items():
            values = entry_values(storage, events, event_ids, positions, has_index_cols)
            _upsert_asset_key(conn, asset_key, values)
    return event_ids


class _NotNumberedInOrder(Exception):
    """The rows of one insert did not get consecutive ids (see `_insert_numbered_in_order`)."""


def _insert_numbered_in_order(conn: Connection, rows: Sequence[Row]) -> list[int]:
    """Insert `rows` into the event table in one `executemany`; their ids, which are those
    inserting them one by one gives.

    SQLite numbers a row of a table with an integer primary key `max(id) + 1`, and the
    transaction holds the database's write lock from its first insert: so the rows get
    consecutive ids, in order. Checked: otherwise (a trigger adding rows, say)
    `_NotNumberedInOrder` is raised and the transaction rolled back. The alternative, an
    `INSERT ... RETURNING` with the ids in parameter order, is sent by SQLAlchemy one row per
    statement on SQLite: it took a third of a batch's time.
    """
    table = SqlEventLogStorageTable
    if not rows:
        return []
    if not opens_transaction_before_insert(conn):
        return _insert_one_by_one(conn, rows)  # each insert commits: no lock to count on
    first = conn.execute(table.insert().returning(table.c.id), [rows[0]]).scalar_one()
    if len(rows) > 1:
        conn.execute(table.insert(), list(rows[1:]))
    last = conn.execute(db.select(db.func.max(table.c.id))).scalar_one()
    if last - first != len(rows) - 1:
        raise _NotNumberedInOrder(f"{len(rows)} rows took the ids {first} to {last}")
    return list(range(first, last + 1))


def opens_transaction_before_insert(conn: Connection) -> bool:
    """Whether the SQLite driver of `conn` begins a transaction before its first insert (the
    sqlite3 module's default, and SQLAlchemy's for SQLite): then the transaction holds the
    database's write lock from that insert to its commit. Not in autocommit mode."""
    dbapi = conn.connection.dbapi_connection
    mode = getattr(dbapi, "autocommit", -1)  # Python 3.12+; -1: the legacy mode
    if mode is True or mode is False:
        return not mode
    return getattr(dbapi, "isolation_level", None) is not None


def _insert_one_by_one(conn: Connection, rows: Sequence[Row]) -> list[int]:
    """Insert `rows` into the event table; their ids in order (one statement per row)."""
    table = SqlEventLogStorageTable
    returning = table.insert().returning(table.c.id, sort_by_parameter_order=True)
    return list(conn.execute(returning, list(rows)).scalars())


def store_asset_event_tags(
    storage: SqlEventLogStorage,
    conn: Connection,
    events: Sequence[EventLogEntry],
    event_ids: Sequence[int],
) -> None:
    """Dagster's `_store_asset_event_tags` for the events that can have indexed tags: it
    finds none on a planned event nor on a materialisation without tags, at ~30 us each."""
    positions = [position for position, event in enumerate(events) if _may_have_tags(event)]
    if positions:
        storage._store_asset_event_tags(
            conn, [events[p] for p in positions], [event_ids[p] for p in positions]
        )


def _may_have_tags(event: EventLogEntry) -> bool:
    # As Dagster's `_tags_for_asset_event` reads them (any other asset event: let it read).
    dagster_event = event.get_dagster_event()
    kind = dagster_event.event_type_value
    if kind == PLANNED_TYPE:
        return False
    if kind == MATERIALIZATION_TYPE:
        return bool(dagster_event.event_specific_data.materialization.tags)  # type: ignore[union-attr]
    return True


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
