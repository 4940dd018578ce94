"""Lean writes: rows no read needs, left out as a batch is written (issue 42's lean home).

A chain run stores per task three planned materialisations and three materialisations; stock
SQLite storage writes each twice (the run's shard and the index shard). Much of that serves no
read:

- **The run's own log.** Every asset read (partition states, the status cache, the asset's
  events and partitions pages, the backfill and automation daemons) queries the index shard;
  the run shard's copies feed the run page's event list, run and step stats, and Dagster's
  per-run reads of asset events. So a run's shard keeps the first `run_log_asset_events` of
  each (asset, kind) and one log line saying the rest are in the asset's own pages (a
  million-task run's page would otherwise list six million events), and the SQLite storage
  answers per-run reads of those kinds from the index shard, which has every one
  (`sqlite_batched`).
- **Superseded planned rows.** Once a materialisation of a partition is stored, its run's
  planned row and any older planned row of that partition change no read: Dagster takes the
  newest row of each kind per partition, and a partition's state from whichever of its newest
  planned and newest materialisation is newer. They are deleted in the transaction that
  stores the materialisation: retention's rules 2 and 3 (`retention_sql`), applied at once to
  the batch's partitions. As there, the asset's newest planned row stays (the UI's latest run
  for the asset), and a planned row newer than the materialisation (a later run, in progress or
  failed) is never touched.
- **Dagster's wrapping of each body.** A materialisation's or observation's JSON is ~2 KB of
  which ~150 bytes are its own; the asset index stores it deflated against a preset
  dictionary (`event_body`), and every read of the column gets the JSON back.

And one write that no read needs *before the run starts*: a run's planned rows past the first
`planned_rows_before_run` per asset are written while the run goes on (`planned_behind`; on
Postgres as far ahead of the run's progress, `planned_paced`).

All are settings of the batched storages (`lean_writes:` in dagster.yaml), on by default
(`POSTGRES_LEAN_WRITES` for Postgres's own);
`run_log_asset_events: null` keeps every event in the run's log, `delete_superseded_planned:
false` every planned row, `compact_bodies: false` stores JSON, `planned_rows_before_run: null`
writes every planned row before the run starts.
"""

import logging
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg
import sqlalchemy as db
from dagster._core.events.log import EventLogEntry
from sqlalchemy.engine import Connection

from scrapeflow_dagster.storage.batches.bodies import compact
from scrapeflow_dagster.storage.batches.write import MATERIALIZATION_TYPE, PLANNED_TYPE

Row = dict[str, Any]
OBSERVATION_TYPE = "ASSET_OBSERVATION"
SAMPLED_TYPES = frozenset({MATERIALIZATION_TYPE, PLANNED_TYPE, OBSERVATION_TYPE})
# Planned rows too (841 -> 139 bytes): at 14 us each, a million-task run's 3 million cost ~40 s,
# most of them written behind the run's start (`planned_behind`); as JSON they made 4.2 GB of
# index (and as much free space once deleted).
COMPACT_TYPES = frozenset({MATERIALIZATION_TYPE, OBSERVATION_TYPE, PLANNED_TYPE})
DEFAULT_RUN_LOG_ASSET_EVENTS = 100
# Per asset: the rows of a 10,000-task run all before it starts (~0.3 s each asset), as stock.
DEFAULT_PLANNED_ROWS_BEFORE_RUN = 10_000
# Postgres: a VACUUM each time a process deleted this many planned rows (`postgres_vacuum`).
DEFAULT_VACUUM_AFTER_DELETED = 2_000
# Runs whose counts a process keeps (a webserver or daemon stores events of many runs).
_RUNS_REMEMBERED = 256

_NEWEST_PLANNED = db.text(
    "SELECT max(id) FROM event_logs WHERE asset_key = :asset_key"
    f" AND dagster_event_type = '{PLANNED_TYPE}'"
)
# One materialisation `:mat_id` of (`:asset_key`, `:partition`) by run `:run_id`: the planned
# rows of that partition older than it that are either its own run's or older than the
# partition's newest planned row, except the asset's newest planned row `:keep_id`.
_DELETE_SUPERSEDED_PLANNED = db.text(
    f"""
DELETE FROM event_logs
WHERE asset_key = :asset_key AND dagster_event_type = '{PLANNED_TYPE}'
  AND partition = :partition AND id < :mat_id AND id <> :keep_id
  AND (run_id = :run_id OR id < (
    SELECT max(id) FROM event_logs
    WHERE asset_key = :asset_key AND dagster_event_type = '{PLANNED_TYPE}'
      AND partition = :partition))
"""
)


# `_DELETE_SUPERSEDED_PLANNED` for a batch's materialisations at once (Postgres), given as
# arrays; at most one per (asset, partition).
_DELETE_SUPERSEDED_PLANNED_SET = db.text(
    f"""
DELETE FROM event_logs
USING unnest(CAST(:asset_key AS text[]), CAST(:partition AS text[]), CAST(:run_id AS text[]),
             CAST(:mat_id AS bigint[]), CAST(:keep_id AS bigint[]))
  AS m(asset_key, partition, run_id, mat_id, keep_id)
WHERE event_logs.asset_key = m.asset_key
  AND event_logs.dagster_event_type = '{PLANNED_TYPE}'
  AND event_logs.partition = m.partition AND event_logs.id < m.mat_id
  AND event_logs.id <> m.keep_id
  AND (event_logs.run_id = m.run_id OR event_logs.id < (
    SELECT max(later.id) FROM event_logs AS later
    WHERE later.asset_key = m.asset_key AND later.dagster_event_type = '{PLANNED_TYPE}'
      AND later.partition = m.partition))
"""
)


@dataclass(frozen=True)
class LeanWrites:
    """What a batched storage leaves out as it writes.

    Attributes:
        run_log_asset_events: asset events of each (asset, kind) a run's own log keeps, per
            writing process (SQLite; None: all, as stock). The index shard keeps every one.
        delete_superseded_planned: delete the planned rows a stored materialisation supersedes.
        compact_bodies: store asset events' bodies deflated (`event_body`; SQLite: in the
            index shard and in the run shards' samples).
        planned_rows_before_run: planned rows per asset written before a run starts; the rest
            are written by a thread while it goes on (`planned_behind`; on Postgres this many
            ahead of the run's progress, `planned_paced`). None: all before, as stock.
        vacuum_after_deleted: VACUUM the event log in the background each time a process
            has deleted this many planned rows (or 5% of the table, when more), so the run's
            later rows reuse their space (`postgres_vacuum`; Postgres only: SQLite reuses a
            freed page at once). None: never.
    """

    run_log_asset_events: int | None = DEFAULT_RUN_LOG_ASSET_EVENTS
    delete_superseded_planned: bool = True
    compact_bodies: bool = True
    planned_rows_before_run: int | None = DEFAULT_PLANNED_ROWS_BEFORE_RUN
    vacuum_after_deleted: int | None = None

    def index_rows(self, rows: Sequence[Row]) -> Sequence[Row]:
        """`rows` as the asset index stores them: bodies of materialisations and observations
        compact when set."""
        if not self.compact_bodies:
            return rows
        return [
            {**row, "event": compact(row["event"])}
            if row["dagster_event_type"] in COMPACT_TYPES
            else row
            for row in rows
        ]


# Postgres: the write-time delete too, as one statement per batch (`delete_superseded_planned`):
# a 10,000-task chain run took 19.7 s with it, 20.6 s without (it took 148 s when it deleted row
# by row). Postgres reuses the deleted rows' space after VACUUM (autovacuum, or retention's):
# the home then grows 3.6 KB per task per chain run instead of 5.1 (measured 2026-11-29).
# Planned rows past the first 1,000 per asset written that far ahead of the run's progress
# (`planned_paced`): all before the run, a refresh's found no free space, the last run's
# materialisations all live, and the home kept 1.44x its size after one run from the second
# refresh on (10,000 tasks, 2026-11-30). VACUUM while writing: a home's first 5,000-task chain
# run kept 3.8 KB per task instead of 4.8 (`postgres_vacuum`).
DEFAULT_POSTGRES_PLANNED_AHEAD = 1_000
POSTGRES_LEAN_WRITES = LeanWrites(
    planned_rows_before_run=DEFAULT_POSTGRES_PLANNED_AHEAD,
    vacuum_after_deleted=DEFAULT_VACUUM_AFTER_DELETED,
)
STOCK_WRITES = LeanWrites(
    run_log_asset_events=None,
    delete_superseded_planned=False,
    compact_bodies=False,
    planned_rows_before_run=None,
)


def lean_writes_config_field(defaults: LeanWrites = LeanWrites()) -> dg.Field:
    """The `lean_writes` key of a batched storage's config (`defaults`: its own)."""
    return dg.Field(
        {
            "run_log_asset_events": dg.Field(
                dg.Noneable(int), is_required=False, default_value=defaults.run_log_asset_events
            ),
            "delete_superseded_planned": dg.Field(
                bool, is_required=False, default_value=defaults.delete_superseded_planned
            ),
            "compact_bodies": dg.Field(
                bool, is_required=False, default_value=defaults.compact_bodies
            ),
            "planned_rows_before_run": dg.Field(
                dg.Noneable(int), is_required=False, default_value=defaults.planned_rows_before_run
            ),
            "vacuum_after_deleted": dg.Field(
                dg.Noneable(int), is_required=False, default_value=defaults.vacuum_after_deleted
            ),
        },
        is_required=False,
        description="Leave out rows no read needs as events are written (docs/configuration.md).",
    )


def lean_writes_from_config(
    config: Mapping[str, Any] | None,
    defaults: LeanWrites = LeanWrites(),
) -> LeanWrites:
    """The `lean_writes` block as a `LeanWrites` (absent keys: `defaults`, the storage's)."""
    if not config:
        return defaults
    limit = config.get("run_log_asset_events", defaults.run_log_asset_events)
    if limit is not None and limit < 0:
        raise dg.DagsterInvalidConfigError(
            "lean_writes.run_log_asset_events must be 0 or more (null keeps every event)", [], limit
        )
    before_run = config.get("planned_rows_before_run", defaults.planned_rows_before_run)
    if before_run is not None and before_run < 1:
        raise dg.DagsterInvalidConfigError(
            "lean_writes.planned_rows_before_run must be 1 or more (null writes every planned"
            " row before the run starts)",
            [],
            before_run,
        )
    vacuum_after = config.get("vacuum_after_deleted", defaults.vacuum_after_deleted)
    if vacuum_after is not None and vacuum_after < 1:
        raise dg.DagsterInvalidConfigError(
            "lean_writes.vacuum_after_deleted must be 1 or more (null: never)", [], vacuum_after
        )
    return LeanWrites(
        run_log_asset_events=limit,
        delete_superseded_planned=bool(
            config.get("delete_superseded_planned", defaults.delete_superseded_planned)
        ),
        compact_bodies=bool(config.get("compact_bodies", defaults.compact_bodies)),
        planned_rows_before_run=before_run,
        vacuum_after_deleted=vacuum_after,
    )


def lean_writes_yaml(lean: LeanWrites, *, indent: str = "    ") -> str:
    """`lean` as the `lean_writes:` block of an event log storage's config in dagster.yaml."""
    limit = "null" if lean.run_log_asset_events is None else str(lean.run_log_asset_events)
    before_run = lean.planned_rows_before_run
    vacuum_after = lean.vacuum_after_deleted
    return (
        f"{indent}lean_writes:\n"
        f"{indent}  run_log_asset_events: {limit}\n"
        f"{indent}  delete_superseded_planned: {str(lean.delete_superseded_planned).lower()}\n"
        f"{indent}  compact_bodies: {str(lean.compact_bodies).lower()}\n"
        f"{indent}  planned_rows_before_run: {'null' if before_run is None else before_run}\n"
        f"{indent}  vacuum_after_deleted: {'null' if vacuum_after is None else vacuum_after}\n"
    )


class RunLogSample:
    """Which of a run's asset event rows its own shard keeps (`run_log_asset_events`)."""

    def __init__(self, limit: int | None) -> None:
        self._limit = limit
        self._counts: OrderedDict[str, Counter[tuple[str, str]]] = OrderedDict()
        # A run's planned rows written behind its start come from a thread (`planned_behind`).
        self._lock = threading.Lock()

    def rows(
        self,
        run_id: str,
        events: Sequence[EventLogEntry],
        rows: Sequence[Row],
        to_row: Any,
    ) -> list[Row]:
        """The rows of `run_id`'s `events` its shard gets: every row but the asset events past
        the limit, and a log line (made by `to_row`, the storage's `_event_to_row`) where an
        (asset, kind) reaches it."""
        if self._limit is None:
            return list(rows)
        with self._lock:
            return self._sample(self._limit, run_id, events, rows, to_row)

    def _sample(
        self,
        limit: int,
        run_id: str,
        events: Sequence[EventLogEntry],
        rows: Sequence[Row],
        to_row: Any,
    ) -> list[Row]:
        counts = self._counts.get(run_id)
        if counts is None:
            counts = self._counts[run_id] = Counter()
            while len(self._counts) > _RUNS_REMEMBERED:
                self._counts.popitem(last=False)
        kept: list[Row] = []
        for event, row in zip(events, rows, strict=True):
            kind, asset_key = row["dagster_event_type"], row["asset_key"]
            if kind not in SAMPLED_TYPES or asset_key is None:
                kept.append(row)
                continue
            seen = counts[(asset_key, kind)]
            counts[(asset_key, kind)] = seen + 1
            if seen < limit:
                kept.append(row)
            elif seen == limit:
                kept.append(to_row(_note(event, kind, asset_key, limit)))
        return kept


def _note(event: EventLogEntry, kind: str, asset_key: str, limit: int) -> EventLogEntry:
    what = {
        MATERIALIZATION_TYPE: "materializations",
        PLANNED_TYPE: "planned materializations",
        OBSERVATION_TYPE: "observations",
    }[kind]
    message = (
        f"This run's log lists the first {limit} {what} of {asset_key} from this process; "
        "the others are stored with the asset (its Partitions and Events pages), not here "
        "(lean_writes.run_log_asset_events in dagster.yaml)."
    )
    return EventLogEntry(
        error_info=None,
        level=logging.INFO,
        user_message=message,
        run_id=event.run_id,
        timestamp=time.time(),
        step_key=event.step_key,
        job_name=event.job_name,
        dagster_event=None,
    )


def delete_superseded_planned(
    conn: Connection, rows: Sequence[Row], event_ids: Sequence[int]
) -> int:
    """Delete the planned rows the materialisations among `rows` (stored in this transaction
    under `event_ids`) supersede (see the module); how many were deleted (0 where the driver
    does not say)."""
    materialized = [
        (row, event_id)
        for row, event_id in zip(rows, event_ids, strict=True)
        if row["dagster_event_type"] == MATERIALIZATION_TYPE
        and row["partition"] is not None
        and row["asset_key"] is not None
    ]
    if not materialized:
        return 0
    newest = {
        asset_key: conn.execute(_NEWEST_PLANNED, {"asset_key": asset_key}).scalar() or 0
        for asset_key in {row["asset_key"] for row, _ in materialized}
    }
    params = [
        {
            "asset_key": row["asset_key"],
            "partition": row["partition"],
            "run_id": row["run_id"],
            "mat_id": event_id,
            "keep_id": newest[row["asset_key"]],
        }
        for row, event_id in materialized
    ]
    once = len({(p["asset_key"], p["partition"]) for p in params}) == len(params)
    if conn.dialect.name == "postgresql" and once:
        # One statement for the batch: psycopg2 sends an executemany one row per round trip
        # (a 10,000-task chain run took 148 s instead of 37). Only where each partition has
        # one materialisation in the batch: the statement reads each partition's newest
        # planned row once, where one by one a later delete sees the earlier ones'.
        deleted = conn.execute(
            _DELETE_SUPERSEDED_PLANNED_SET,
            {name: [p[name] for p in params] for name in params[0]},
        )
        return max(deleted.rowcount, 0)
    return max(conn.execute(_DELETE_SUPERSEDED_PLANNED, params).rowcount, 0)
