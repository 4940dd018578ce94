"""Retention: delete the asset events and run logs of a Dagster home that no read needs.

Configured by a `retention:` block in the batched event log storage's config (dagster.yaml;
absent: nothing is ever pruned)::

    event_log_storage:
      module: scrapeflow_dagster.storage.sqlite.event_log
      class: BatchedSqliteEventLogStorage
      config:
        base_dir: /abs/home/history/runs/
        retention:
          superseded_grace_seconds: 3600
          run_logs_keep_days: 7
          vacuum: true
          at_write: true

and applied by `prune` (`scrapeflow home prune`, the `retention_sensor`) and, on Postgres, as
runs write (`delete_superseded_at_write`). Kept per (asset,
partition): the newest MATERIALIZATION and OBSERVATION, and the newest PLANNED unless a
materialisation of its own run superseded it (`retention_sql` has the rules and why they change
no read). Run logs of finished runs older than `run_logs_keep_days` that no kept asset event
names are deleted (the run shard on SQLite, the rows on Postgres); run records stay. Never
touched: `asset_keys` (the status cache), `dynamic_partitions`, asset check rows, run status
events. Unpartitioned asset events are left as they are.

The rules lean on how Dagster reads its rows (max ids per partition): on a Dagster the version
guard has not verified, `prune` warns once and deletes nothing.
"""

import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import dagster as dg
import sqlalchemy as db
from sqlalchemy.engine import Connection

from scrapeflow_dagster.storage.dagster_internals.version_guard import (
    POSTGRES_PACKAGES,
    SQLITE_PACKAGES,
    supports_installed_versions,
)
from scrapeflow_dagster.storage.retention import sql
from scrapeflow_dagster.storage.retention.backends import Backend, backend_for

# At most this many partitions per transaction: ~10-50 ms on SQLite, so a run's writer waits
# little behind a chunk (7 ms on Postgres at 200,000 tasks).
ROWS_PER_CHUNK = 500
# A pass goes through its id window in slices of about this many asset event rows, and keeps
# its place at the end of the last slice done (a few chunks: little to take again).
ROWS_PER_SLICE = 4 * ROWS_PER_CHUNK
PRUNE_FALLBACK = "retention deletes nothing (the home keeps every event)"
FINISHED_RUN_STATUSES = [
    dg.DagsterRunStatus.SUCCESS,
    dg.DagsterRunStatus.FAILURE,
    dg.DagsterRunStatus.CANCELED,
]


@dataclass(frozen=True)
class RetentionPolicy:
    """What a home keeps.

    Attributes:
        superseded_grace_seconds: a row superseded by a newer one goes only once the newer row
            is this old, so that a sensor following events by storage id still sees it (0: at
            once).
        run_logs_keep_days: the logs of finished runs no kept asset event names are deleted
            this long after the run ended (None: kept).
        vacuum: give freed space back after a prune (SQLite `incremental_vacuum`, Postgres
            `VACUUM` and a concurrent rebuild of bloated indexes, `postgres_reindex`).
        at_write: on Postgres, the write of a materialisation or observation also deletes the
            rows of its (asset, partition, kind) it supersedes that are themselves
            `superseded_grace_seconds` old (`retention_sql.DELETE_SUPERSEDED_AT_WRITE`), so a
            refresh reuses its predecessors' space instead of growing the tables to two runs'.
    """

    superseded_grace_seconds: float = 3600.0
    run_logs_keep_days: float | None = 7.0
    vacuum: bool = True
    at_write: bool = True


@dataclass
class PruneReport:
    """What one `prune` did (or, dry, would do).

    Attributes:
        deleted_by_kind: asset event rows deleted, by Dagster event type.
        run_logs_removed: runs whose logs were deleted (a dry run counts those no asset event
            names before its rows would go, so fewer than a prune removes).
        bytes_before: the event log's size before (SQLite: the folder of the shards; Postgres:
            `event_logs` and `asset_event_tags` with their indexes).
        bytes_after: the same after.
        reindexed: the indexes rebuilt after the VACUUM (Postgres: `postgres_reindex`).
        horizon_id: every pair with asset events up to this id was pruned (the sensor's next
            cursor: a pass the budget cut short goes on from here).
        complete: False when the time budget ran out first.
        skipped: why nothing was done, when nothing was.
    """

    deleted_by_kind: Counter[str] = field(default_factory=Counter)
    run_logs_removed: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    reindexed: list[str] = field(default_factory=list)
    horizon_id: int = 0
    complete: bool = True
    skipped: str | None = None

    @property
    def deleted(self) -> int:
        """Asset event rows deleted, all kinds."""
        return sum(self.deleted_by_kind.values())


def retention_config_field() -> dg.Field:
    """The `retention` key of the batched storages' config (absent: no pruning)."""
    defaults = RetentionPolicy()
    return dg.Field(
        {
            "superseded_grace_seconds": dg.Field(
                float, is_required=False, default_value=defaults.superseded_grace_seconds
            ),
            "run_logs_keep_days": dg.Field(
                dg.Noneable(float), is_required=False, default_value=defaults.run_logs_keep_days
            ),
            "vacuum": dg.Field(bool, is_required=False, default_value=defaults.vacuum),
            "at_write": dg.Field(bool, is_required=False, default_value=defaults.at_write),
        },
        is_required=False,
        description="Prune superseded asset events and old run logs (docs/configuration.md).",
    )


def policy_from_config(config: Mapping[str, Any] | None) -> RetentionPolicy | None:
    """The policy of a `retention` config block; None when there is none."""
    if config is None:
        return None
    return RetentionPolicy(**dict(config))


def retention_yaml(policy: RetentionPolicy, *, indent: str = "    ") -> str:
    """The `retention:` block of `policy` as it goes under the storage's `config:`."""
    keep = "null" if policy.run_logs_keep_days is None else policy.run_logs_keep_days
    return (
        f"{indent}retention:\n"
        f"{indent}  superseded_grace_seconds: {policy.superseded_grace_seconds:g}\n"
        f"{indent}  run_logs_keep_days: {keep if keep == 'null' else f'{keep:g}'}\n"
        f"{indent}  vacuum: {str(policy.vacuum).lower()}\n"
        f"{indent}  at_write: {str(policy.at_write).lower()}\n"
    )


def delete_superseded_at_write(
    conn: Connection,
    rows: Sequence[Mapping[str, Any]],
    event_ids: Sequence[int],
    policy: RetentionPolicy,
) -> int:
    """Delete, in the Postgres transaction that stored `rows` under `event_ids`, the older
    rows their materialisations and observations supersede that are at least the policy's
    grace old (`RetentionPolicy.at_write`); how many went (0 where the driver does not say).

    What a later prune would delete under rule 1, only sooner: every read is as after a prune.
    """
    written = sorted(
        {
            (str(row["asset_key"]), str(row["dagster_event_type"]), str(row["partition"]))
            for row in rows
            if row["dagster_event_type"] in (sql.MATERIALIZATION, sql.OBSERVATION)
            and row["partition"]
            and row["asset_key"]
        }
    )
    if not written:
        return 0
    cutoff = datetime.now(UTC).replace(tzinfo=None) - timedelta(
        seconds=policy.superseded_grace_seconds
    )
    deleted = conn.execute(
        db.text(sql.DELETE_SUPERSEDED_AT_WRITE),
        {
            "asset_key": [asset_key for asset_key, _, _ in written],
            "kind": [kind for _, kind, _ in written],
            "partition": [partition for _, _, partition in written],
            "first_id": min(event_ids),
            "cutoff": cutoff,
        },
    )
    return max(deleted.rowcount, 0)


def prune(
    storage: Any,
    policy: RetentionPolicy,
    *,
    budget_seconds: float | None = None,
    dry_run: bool = False,
    after_id: int = 0,
    vacuum_full: bool = False,
) -> PruneReport:
    """Delete what `policy` lets go from the event log `storage` (module docstring).

    Args:
        storage: the instance's event log storage (SQLite or Postgres, batched or stock).
        policy: what to keep.
        budget_seconds: stop starting id slices after this long (None: go through
            everything); one slice always runs.
        dry_run: count what would go; delete nothing (the count is exact for a whole pass:
            `after_id` 0, no budget, as `scrapeflow home prune --dry-run` makes it).
        after_id: only the (asset, partition) pairs with events newer than this id (the
            sensor's cursor, or where a pass cut short got to: `horizon_id`; 0: every pair).
        vacuum_full: a one-time `VACUUM` (SQLite, which also turns `auto_vacuum` on for a home
            made before it was set) or `VACUUM FULL` (Postgres): needs the home idle.

    Raises:
        TypeError: for an event log that is neither SQLite nor Postgres.
    """
    backend, kind = backend_for(storage)
    try:
        packages = SQLITE_PACKAGES if kind == "sqlite" else POSTGRES_PACKAGES
        if not supports_installed_versions(packages, fallback=PRUNE_FALLBACK):
            return PruneReport(skipped=f"Dagster not verified: {PRUNE_FALLBACK}")
        return _prune(
            backend,
            storage,
            policy,
            deadline=None if budget_seconds is None else time.monotonic() + budget_seconds,
            dry_run=dry_run,
            after_id=after_id,
            vacuum_full=vacuum_full,
        )
    finally:
        backend.close()


def _prune(
    backend: Backend,
    storage: Any,
    policy: RetentionPolicy,
    *,
    deadline: float | None,
    dry_run: bool,
    after_id: int,
    vacuum_full: bool,
) -> PruneReport:
    report = PruneReport(bytes_before=backend.size_bytes())
    now = datetime.now(UTC).replace(tzinfo=None)  # stored as naive UTC
    grace = policy.superseded_grace_seconds
    horizon = backend.horizon_id(now - timedelta(seconds=grace) if grace > 0 else None)
    # The window is walked by id slices so that a pass the deadline cuts short says how far
    # it got (`horizon_id`): the next call goes on from there, not from the start. No slice
    # starts after the deadline but the first, so every call moves on.
    report.horizon_id = after_id
    for slice_end in _slice_ends(backend, after_id, horizon):
        if _past(deadline) and report.horizon_id > after_id:
            report.complete = False
            break
        for clause, params in _slice_chunks(backend, report.horizon_id, slice_end):
            params = {**params, "horizon_id": horizon}
            report.deleted_by_kind.update(backend.prune_chunk(clause, params, dry_run=dry_run))
        report.horizon_id = slice_end
    if report.complete and policy.run_logs_keep_days is not None:
        report.run_logs_removed = _remove_old_run_logs(
            backend, storage, now - timedelta(days=policy.run_logs_keep_days), dry_run=dry_run
        )
    if not dry_run and (policy.vacuum or vacuum_full):
        report.reindexed = backend.reclaim(
            full=vacuum_full,
            deleted=report.deleted,
            pass_complete=report.complete,
            # A budgeted prune (a sensor tick) rebuilds one index; the next tick the next.
            max_rebuilds=None if deadline is None else 1,
        )
    report.bytes_after = backend.size_bytes()
    return report


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() > deadline


def _slice_ends(backend: Backend, after_id: int, horizon: int) -> Iterator[int]:
    """Ends of consecutive id slices of (`after_id`, `horizon`], each holding about
    `ROWS_PER_SLICE` asset event rows; the last one is `horizon`."""
    start = after_id
    while start < horizon:
        rows = backend.fetch(
            sql.SLICE_END,
            {"after_id": start, "horizon_id": horizon, "offset": ROWS_PER_SLICE - 1},
        )
        end = int(rows[0][0]) if rows else horizon
        yield end
        start = end


def _slice_chunks(
    backend: Backend, after_id: int, slice_end: int
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The partitions with asset events in (`after_id`, `slice_end`], by asset, in lists."""
    by_asset: dict[str, list[str]] = {}
    for asset_key, partition in backend.fetch(
        sql.PAIRS_IN_WINDOW, {"after_id": after_id, "horizon_id": slice_end}
    ):
        by_asset.setdefault(str(asset_key), []).append(str(partition))
    for asset_key, partitions in sorted(by_asset.items()):
        partitions.sort()
        for start in range(0, len(partitions), ROWS_PER_CHUNK):
            clause, params = sql.list_clause(partitions[start : start + ROWS_PER_CHUNK])
            bounds = {"slice_after": after_id, "slice_end": slice_end}  # for dry counts
            yield clause, {"asset_key": asset_key, **bounds, **params}


def _remove_old_run_logs(
    backend: Backend, storage: Any, ended_before: datetime, *, dry_run: bool
) -> int:
    """Delete the logs of finished runs last updated before `ended_before` that no asset event
    names; returns how many runs lost their logs. Needs the storage's instance (run records)."""
    if not storage.has_instance:
        return 0
    # Ids, not records: a record carries its run's config and tags, and this asks for every
    # finished run the home ever had.
    run_ids = storage._instance.get_run_ids(
        filters=dg.RunsFilter(
            statuses=FINISHED_RUN_STATUSES,
            updated_before=ended_before.replace(tzinfo=UTC),
        )
    )
    return backend.remove_run_logs(list(run_ids), dry_run=dry_run)
