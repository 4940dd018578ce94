"""The retry sensor: failed partitions due again, downstream steps whose upstream succeeded,
re-fetches after block pages, grouped into few range runs (a large one cut to fill the run
queue)."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from scrapeflow_dagster.defs.automation import (
    MAX_RUNS_PER_TICK,
    ExecutorChain,
    interval_seconds,
    promised_sensor_status,
    range_run_requests,
    spread_ranges,
)
from scrapeflow_dagster.engine.errors import StatusFileError
from scrapeflow_dagster.engine.retry.between_runs import Decision, RetryRules, decide
from scrapeflow_dagster.engine.retry.ranges import plan_ranges
from scrapeflow_dagster.engine.state.files import load_status
from scrapeflow_dagster.engine.state.schema import failures, ran_after, utc_now
from scrapeflow_dagster.lib.partitions import TASKS_PARTITIONS_NAME, tasks_partitions_def
from scrapeflow_dagster.lib.resources import AutomationSettingsResource, StatusStoreResource


def plan_catch_up(
    instance: dg.DagsterInstance,
    status_dir: Path,
    asset: dg.AssetsDefinition,
    requires: list[dg.AssetKey],
    rules: RetryRules,
) -> "CatchUpPlan":
    """What to run for `asset`: failed partitions due for a retry, partitions whose upstream
    steps are materialised while this one is missing, and tasks whose block page calls for a
    forced re-fetch by the root (fetching) asset; a large range is cut into as many runs as
    the instance's run queue starts at a time."""
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
    # The run that last planned each failed partition: part of each run key, so that a run
    # killed before it wrote a status file (SIGKILL, OOM) does not make the retry's run key
    # the same as the one before it (the daemon launches a run key once).
    attempts = instance.event_log_storage.get_latest_asset_partition_materialization_attempts_without_materializations(  # noqa: E501
        asset.key
    )
    # Where an upstream step materialised after this one (a refresh re-fetched the page):
    # candidates for a re-run, confirmed by the status file (a run that skipped a fresh task
    # materialises it again without changing it).
    own_ids, upstream_ids = _materialisation_ids(instance, asset.key, requires)
    due: list[str] = []
    refetch: list[str] = []
    passable: set[str] = set()
    fingerprint: list[str] = []
    refetch_fingerprint: list[str] = []
    for key in ordered:
        state = statuses.get(key)
        ready = all(u.get(key) == dg.AssetPartitionStatus.MATERIALIZED for u in upstream)
        if state == dg.AssetPartitionStatus.MATERIALIZED:
            newest_upstream = max((ids.get(key, 0) for ids in upstream_ids), default=0)
            if ready and newest_upstream > own_ids.get(key, 0):
                if _upstream_ran_after(status_dir, key, name, upstream_names):
                    due.append(key)
                    fingerprint.append(f"{key}:u{newest_upstream}")
                    continue
            passable.add(key)
        elif state == dg.AssetPartitionStatus.FAILED and ready:
            # Not ready: Dagster also marks FAILED the tasks a failed run skipped for a missing
            # upstream; they are due once their upstream succeeds, not before.
            try:
                status = load_status(status_dir, key)
                decision = decide(status, name, rules, now, requires=upstream_names)
            except StatusFileError:
                status, decision = None, Decision.GIVE_UP
            # The failure count and the failed run make each retry a new run key.
            generation = f"f{failures(status or {}, name)}:{_run_of(attempts, key)}"
            if decision == Decision.DUE:
                due.append(key)
                fingerprint.append(f"{key}:{generation}")
            elif decision == Decision.DONE:
                # The status file says it succeeded, but its run failed before saying so to
                # Dagster (killed after the task ended): a run skips it and materialises it,
                # which the steps after it wait for.
                due.append(key)
                fingerprint.append(f"{key}:done:{_run_of(attempts, key)}")
            elif decision == Decision.REFETCH:
                refetch.append(key)
                refetch_fingerprint.append(f"{key}:{generation}")
        elif state is None and requires and ready:
            due.append(key)
            fingerprint.append(f"{key}:m")
    if due:
        passable.update(due)
    ranges = spread_ranges(
        instance, ordered, plan_ranges(ordered, due, passable=passable)[:MAX_RUNS_PER_TICK]
    )
    # Forced runs re-fetch every key of their range: no gaps swept in.
    refetch_ranges = spread_ranges(
        instance,
        ordered,
        plan_ranges(ordered, refetch, passable=set(), max_gap=0)[:MAX_RUNS_PER_TICK],
    )
    return CatchUpPlan(
        ranges=ranges,
        fingerprint="|".join(fingerprint),
        refetch_ranges=refetch_ranges,
        refetch_fingerprint="|".join(refetch_fingerprint),
        ordered=ordered,
    )


def _materialisation_ids(
    instance: dg.DagsterInstance, asset: dg.AssetKey, requires: Sequence[dg.AssetKey]
) -> tuple[Mapping[str, int], list[Mapping[str, int]]]:
    """The latest materialisation's storage id per partition of `asset` and of each of
    `requires` (one query each)."""
    storage = instance.event_log_storage
    kind = dg.DagsterEventType.ASSET_MATERIALIZATION
    if not requires:
        return {}, []
    own = storage.get_latest_storage_id_by_partition(asset, kind)
    return own, [storage.get_latest_storage_id_by_partition(up, kind) for up in requires]


def _upstream_ran_after(status_dir: Path, key: str, name: str, upstream: Sequence[str]) -> bool:
    try:
        status = load_status(status_dir, key)
    except StatusFileError:
        return False  # the run would fail on it too: left to the failed-task path
    return status is not None and any(ran_after(status, up, name) for up in upstream)


def _run_of(attempts: Mapping[str, tuple[str, int]], key: str) -> str:
    attempt = attempts.get(key)
    return attempt[0][:8] if attempt else "-"


@dataclass(frozen=True)
class CatchUpPlan:
    """Range runs of one asset, plus forced `scrape` runs for tasks that need a new fetch."""

    ranges: list[tuple[str, str]]
    fingerprint: str
    refetch_ranges: list[tuple[str, str]]
    refetch_fingerprint: str
    ordered: Sequence[str]  # every partition key, in order: the ranges' frame


def build_retry_sensor(
    executor_assets: Sequence[dg.AssetsDefinition], *, in_process_small_runs: bool = False
) -> dg.SensorDefinition:
    """The retry sensor over `executor_assets` (upstream first; the first one fetches).
    `in_process_small_runs`: see `ExecutorChain`."""
    chain = ExecutorChain.of(executor_assets, in_process_small_runs=in_process_small_runs)

    @dg.sensor(
        name="retry_sensor",
        minimum_interval_seconds=interval_seconds(60),
        default_status=promised_sensor_status(),
        target=chain.keys,
        description="Re-runs failed partitions (attempt cap, backoff) and pending later steps.",
    )
    def retry_sensor(
        context: dg.SensorEvaluationContext,
        status_store: StatusStoreResource,
        automation_settings: AutomationSettingsResource,
    ) -> dg.SensorResult | dg.SkipReason:
        """For each executor asset: failed tasks due for a retry plus tasks whose upstream
        steps succeeded, grouped into few range runs; permanent failures and capped tasks are
        left alone."""
        layout = status_store.layout()
        rules = automation_settings.retry_rules()
        runs: list[dg.RunRequest] = []
        for asset in chain.assets:
            requires = chain.requires(asset)
            plan = plan_catch_up(context.instance, layout.status_dir, asset, requires, rules)
            runs += range_run_requests(
                chain,
                asset.key,
                plan.ranges,
                plan.ordered,
                reason="retry",
                fingerprint=plan.fingerprint,
            )
            runs += range_run_requests(
                chain,
                chain.root,
                plan.refetch_ranges,
                plan.ordered,
                reason=f"refetch-{asset.key.to_user_string()}",
                fingerprint=plan.refetch_fingerprint,
                run_config=chain.step_config(force=True),
            )
        if not runs:
            return dg.SkipReason("no failed or pending partitions are due")
        return dg.SensorResult(run_requests=runs)

    return retry_sensor
