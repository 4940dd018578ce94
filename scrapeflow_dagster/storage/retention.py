"""Retention: delete the asset events and run logs of a Dagster home that no read needs.

Configured by a `retention:` block in the batched event log storage's config (dagster.yaml;
absent: nothing is ever pruned)::

    event_log_storage:
      module: scrapeflow_dagster.storage.sqlite_batched
      class: BatchedSqliteEventLogStorage
      config:
        base_dir: /abs/home/history/runs/
        retention:
          superseded_grace_seconds: 3600
          run_logs_keep_days: 7
          vacuum: true

and applied by `prune` (`scrapeflow home prune`, the `retention_sensor`). Kept per (asset,
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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import dagster as dg

from scrapeflow_dagster.storage import retention_sql as sql
from scrapeflow_dagster.storage.retention_backends import Backend, backend_for
from scrapeflow_dagster.storage.version_guard import (
    POSTGRES_PACKAGES,
    SQLITE_PACKAGES,
    supports_installed_versions,
)

# About this many rows of each kind per transaction: ~10-50 ms on SQLite, so a run's writer
# waits little behind a chunk.
ROWS_PER_CHUNK = 500
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
    """

    superseded_grace_seconds: float = 3600.0
    run_logs_keep_days: float | None = 7.0
    vacuum: bool = True


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
        horizon_id: rows with ids up to this one were considered (the sensor's next cursor).
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
    )


def prune(
    storage: Any,
    policy: RetentionPolicy,
    *,
    budget_seconds: float | None = None,
    dry_run: bool = False,
    after_id: int | None = None,
    vacuum_full: bool = False,
) -> PruneReport:
    """Delete what `policy` lets go from the event log `storage` (module docstring).

    Args:
        storage: the instance's event log storage (SQLite or Postgres, batched or stock).
        policy: what to keep.
        budget_seconds: stop starting chunks after this long (None: go through everything).
        dry_run: count what would go; delete nothing.
        after_id: only the (asset, partition) pairs with events newer than this id (the
            sensor's cursor; None: every pair).
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
    after_id: int | None,
    vacuum_full: bool,
) -> PruneReport:
    report = PruneReport(bytes_before=backend.size_bytes())
    now = datetime.now(UTC).replace(tzinfo=None)  # stored as naive UTC
    grace = policy.superseded_grace_seconds
    horizon = backend.horizon_id(now - timedelta(seconds=grace) if grace > 0 else None)
    report.horizon_id = horizon
    chunks = _cursor_chunks(backend, after_id, horizon) if after_id is not None else None
    for clause, params in chunks if chunks is not None else _all_chunks(backend):
        if deadline is not None and time.monotonic() > deadline:
            report.complete = False
            break
        params = {**params, "horizon_id": horizon}
        report.deleted_by_kind.update(backend.prune_chunk(clause, params, dry_run=dry_run))
    if report.complete and policy.run_logs_keep_days is not None:
        report.run_logs_removed = _remove_old_run_logs(
            backend, storage, now - timedelta(days=policy.run_logs_keep_days), dry_run=dry_run
        )
    if not report.complete and after_id is not None:
        report.horizon_id = after_id  # the pairs left over are taken again next time
    if not dry_run and (policy.vacuum or vacuum_full):
        report.reindexed = backend.reclaim(full=vacuum_full)
    report.bytes_after = backend.size_bytes()
    return report


def _all_chunks(backend: Backend) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every asset's partitions in ranges of about `ROWS_PER_CHUNK` rows of each kind."""
    for (asset_key,) in backend.fetch(sql.ASSET_KEYS, {}):
        after: str | None = None
        while True:
            ends = [
                backend.fetch(
                    sql.chunk_end_sql(after=after is not None),
                    {
                        "asset_key": asset_key,
                        "kind": kind,
                        "after": after,
                        "offset": ROWS_PER_CHUNK - 1,
                    },
                )
                for kind in sql.ASSET_KINDS
            ]
            found = [str(rows[0][0]) for rows in ends if rows]
            last = min(found) if found else None
            clause = sql.range_clause(after=after is not None, last=last is not None)
            yield clause, {"asset_key": asset_key, "after": after, "last": last}
            if last is None:
                break
            after = last


def _cursor_chunks(
    backend: Backend, after_id: int, horizon: int
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The partitions with asset events in (`after_id`, `horizon`], by asset, in lists."""
    by_asset: dict[str, list[str]] = {}
    for asset_key, partition in backend.fetch(
        sql.PAIRS_IN_WINDOW, {"after_id": after_id, "horizon_id": horizon}
    ):
        by_asset.setdefault(str(asset_key), []).append(str(partition))
    for asset_key, partitions in sorted(by_asset.items()):
        partitions.sort()
        for start in range(0, len(partitions), ROWS_PER_CHUNK):
            clause, params = sql.list_clause(partitions[start : start + ROWS_PER_CHUNK])
            yield clause, {"asset_key": asset_key, **params}


def _remove_old_run_logs(
    backend: Backend, storage: Any, ended_before: datetime, *, dry_run: bool
) -> int:
    """Delete the logs of finished runs last updated before `ended_before` that no asset event
    names; returns how many runs lost their logs. Needs the storage's instance (run records)."""
    if not storage.has_instance:
        return 0
    records = storage._instance.get_run_records(
        filters=dg.RunsFilter(
            statuses=FINISHED_RUN_STATUSES,
            updated_before=ended_before.replace(tzinfo=UTC),
        )
    )
    return sum(
        backend.remove_run_logs(record.dagster_run.run_id, dry_run=dry_run) for record in records
    )
