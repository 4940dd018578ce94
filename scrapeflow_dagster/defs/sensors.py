"""Sensors: take in task files from the inbox; re-run failed and pending partitions."""

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from scrapeflow_dagster.defs.assets import SCRAPE_KEY, executor_assets
from scrapeflow_dagster.defs.partitions import (
    TASKS_PARTITIONS_NAME,
    add_task_partitions,
    tasks_partitions_def,
)
from scrapeflow_dagster.defs.resources import AutomationSettingsResource, StatusStoreResource
from scrapeflow_dagster.defs.run_requests import range_run_request, run_exists
from scrapeflow_dagster.engine.errors import StatusFileError
from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.retry.between_runs import Decision, RetryRules, decide
from scrapeflow_dagster.engine.retry.ranges import plan_ranges
from scrapeflow_dagster.engine.state.files import load_status
from scrapeflow_dagster.engine.state.schema import failures, utc_now
from scrapeflow_dagster.engine.tasks.inbox import (
    Batch,
    finish_batch,
    pending_batches,
    take_waiting_files,
)

MAX_FILES_PER_TICK = 20
# Dagster gives a sensor evaluation 60 s (DAGSTER_SENSOR_GRPC_TIMEOUT_SECONDS); files are taken
# whole, so no new file is started after this much of it.
INBOX_TICK_BUDGET_SECONDS = 20.0
MAX_RUNS_PER_TICK = 10
# Deployment setting, read when the definitions load: how often the daemon may tick each
# sensor (Dagster needs it at definition time, so it cannot be a resource field).
INTERVAL_ENV = "SCRAPEFLOW_SENSOR_INTERVAL_SECONDS"


def _interval(default_seconds: int) -> int:
    value = os.environ.get(INTERVAL_ENV)
    return int(value) if value else default_seconds


EXECUTOR_KEYS = [asset.key for asset in executor_assets]


def plan_first_runs(instance: dg.DagsterInstance, keys: Sequence[str]) -> list[tuple[str, str]]:
    """Ranges over those of `keys` whose `scrape` never ran (not materialised, failed or in
    progress): a file dropped again asks for nothing new, and failures are the retry
    sensor's."""
    ordered = instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME)
    found = instance.get_status_by_partition(SCRAPE_KEY, ordered, tasks_partitions_def) or {}
    never_ran = [key for key in keys if found.get(key) is None]
    materialized = {k for k, s in found.items() if s == dg.AssetPartitionStatus.MATERIALIZED}
    return plan_ranges(ordered, never_ran, passable=materialized)


def inbox_run_requests(batch: Batch) -> list[dg.RunRequest]:
    """The runs a batch asks for: every executor asset, in order, over each of its ranges.

    The run keys depend only on the batch, so asking again after a killed tick never
    launches a run twice (the daemon launches a run key once).
    """
    return [
        range_run_request(
            EXECUTOR_KEYS,
            first,
            last,
            reason="inbox",
            fingerprint=f"{batch.digest}:{batch.accepted_at}",
        )
        for first, last in batch.ranges
    ]


@dg.sensor(
    name="inbox_sensor",
    minimum_interval_seconds=_interval(30),
    target=EXECUTOR_KEYS,
    description="Adds tasks from files dropped in <data>/inbox/ and materialises the new ones.",
)
def inbox_sensor(
    context: dg.SensorEvaluationContext, status_store: StatusStoreResource
) -> dg.SensorResult | dg.SkipReason:
    """Take inbox files: store params, add partitions, then request runs of every executor
    asset over the new keys.

    A file leaves the inbox only after its keys are partitions and its runs are written down
    in `inbox/accepted/`; those runs are requested on every tick until Dagster has created
    them. Bad lines are logged and written next to the moved file as `<file>.errors.txt`.
    """
    layout = status_store.layout()
    instance = context.instance
    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        for taken in take_waiting_files(
            layout,
            ledger=ledger,
            add_partitions=lambda keys: add_task_partitions(instance, keys),
            plan_first_runs=lambda keys: plan_first_runs(instance, keys),
            max_files=MAX_FILES_PER_TICK,
            budget_seconds=INBOX_TICK_BUDGET_SECONDS,
        ):
            batch = taken.batch
            for error in taken.errors[:20]:
                context.log.warning(error)
            context.log.info(
                f"{batch.source}: {batch.tasks} tasks ({batch.new} new), {batch.refused} "
                f"refused, {len(batch.ranges)} runs; moved to done/{batch.stored_as}"
            )
    runs: list[dg.RunRequest] = []
    for batch in pending_batches(layout):
        requests = inbox_run_requests(batch)
        if all(run_exists(instance, r.run_key or "") for r in requests):
            finish_batch(layout, batch)
        else:
            runs.extend(requests)
    if not runs:
        return dg.SkipReason(f"no task files in {layout.inbox_dir}")
    return dg.SensorResult(run_requests=runs)


def plan_catch_up(
    instance: dg.DagsterInstance,
    status_dir: Path,
    asset: dg.AssetsDefinition,
    requires: list[dg.AssetKey],
    rules: RetryRules,
) -> "CatchUpPlan":
    """What to run for `asset`: failed partitions due for a retry, partitions whose upstream
    steps are materialised while this one is missing, and tasks whose block page calls for a
    forced re-fetch by `scrape`."""
    ordered = instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME)
    # None (not an empty mapping) for an asset that never ran or was never planned.
    statuses = instance.get_status_by_partition(asset.key, ordered, tasks_partitions_def) or {}
    upstream = [
        instance.get_status_by_partition(key, ordered, tasks_partitions_def) or {}
        for key in requires
    ]
    now = utc_now()
    name = asset.key.to_user_string()
    upstream_names = [k.to_user_string() for k in requires]
    due: list[str] = []
    refetch: list[str] = []
    passable: set[str] = set()
    fingerprint: list[str] = []
    for key in ordered:
        state = statuses.get(key)
        ready = all(u.get(key) == dg.AssetPartitionStatus.MATERIALIZED for u in upstream)
        if state == dg.AssetPartitionStatus.MATERIALIZED:
            passable.add(key)
        elif state == dg.AssetPartitionStatus.FAILED and ready:
            # Not ready: Dagster also marks FAILED the tasks a failed run skipped for a missing
            # upstream; they are due once their upstream succeeds, not before.
            try:
                status = load_status(status_dir, key)
                decision = decide(status, name, rules, now, requires=upstream_names)
            except StatusFileError:
                status, decision = None, Decision.GIVE_UP
            if decision == Decision.DUE:
                due.append(key)
                # The failure count makes each retry a new run key (the daemon launches a
                # run key once).
                fingerprint.append(f"{key}:f{failures(status or {}, name)}")
            elif decision == Decision.REFETCH:
                refetch.append(key)
        elif state is None and requires and ready:
            due.append(key)
            fingerprint.append(f"{key}:m")
    if due:
        passable.update(due)
    return CatchUpPlan(
        ranges=plan_ranges(ordered, due, passable=passable)[:MAX_RUNS_PER_TICK],
        fingerprint="|".join(fingerprint),
        # Forced runs re-fetch every key of their range: no gaps swept in.
        refetch_ranges=plan_ranges(ordered, refetch, passable=set(), max_gap=0)[:MAX_RUNS_PER_TICK],
        refetch_fingerprint="|".join(refetch),
    )


@dataclass(frozen=True)
class CatchUpPlan:
    """Range runs of one asset, plus forced `scrape` runs for tasks that need a new fetch."""

    ranges: list[tuple[str, str]]
    fingerprint: str
    refetch_ranges: list[tuple[str, str]]
    refetch_fingerprint: str


@dg.sensor(
    name="retry_sensor",
    minimum_interval_seconds=_interval(60),
    target=EXECUTOR_KEYS,
    description="Re-runs failed partitions (attempt cap, backoff) and pending downstream steps.",
)
def retry_sensor(
    context: dg.SensorEvaluationContext,
    status_store: StatusStoreResource,
    automation_settings: AutomationSettingsResource,
) -> dg.SensorResult | dg.SkipReason:
    """For each executor asset: failed tasks due for a retry plus tasks whose upstream steps
    succeeded, grouped into few range runs; permanent failures and capped tasks are left alone."""
    layout = status_store.layout()
    rules = automation_settings.retry_rules()
    runs: list[dg.RunRequest] = []
    for asset in executor_assets:
        requires = [dep.asset_key for spec in asset.specs for dep in spec.deps]
        plan = plan_catch_up(context.instance, layout.status_dir, asset, requires, rules)
        runs.extend(
            range_run_request(asset.key, first, last, reason="retry", fingerprint=plan.fingerprint)
            for first, last in plan.ranges
        )
        runs.extend(
            range_run_request(
                SCRAPE_KEY,
                first,
                last,
                reason=f"refetch-{asset.key.to_user_string()}",
                fingerprint=plan.refetch_fingerprint,
                run_config={"ops": {"scrape": {"config": {"force": True}}}},
            )
            for first, last in plan.refetch_ranges
        )
    if not runs:
        return dg.SkipReason("no failed or pending partitions are due")
    return dg.SensorResult(run_requests=runs)
