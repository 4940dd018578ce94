"""Sensors: take in task files from the inbox; re-run failed and pending partitions."""

import os
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg

from scrapeflow_dagster.defs.assets import executor_assets
from scrapeflow_dagster.defs.partitions import TASKS_PARTITIONS_NAME, tasks_partitions_def
from scrapeflow_dagster.defs.resources import StatusStoreResource
from scrapeflow_dagster.defs.run_requests import chunked_ranges, range_run_request
from scrapeflow_dagster.engine.errors import StatusFileError
from scrapeflow_dagster.engine.intake import SUFFIXES, read_task_file
from scrapeflow_dagster.engine.ledger import Ledger
from scrapeflow_dagster.engine.retry_plan import Decision, RetryRules, decide, plan_ranges
from scrapeflow_dagster.engine.status import load_status
from scrapeflow_dagster.engine.tasks import add_tasks

MAX_FILES_PER_TICK = 20
RUN_CHUNK_PARTITIONS = 10_000
MAX_RUNS_PER_TICK = 10


def _move_aside(path: Path, folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    target = folder / f"{stamp}-{path.name}"
    copies = 1
    while target.exists():  # the same name dropped again within the second: keep both
        copies += 1
        target = folder / f"{stamp}-{copies}-{path.name}"
    shutil.move(path, target)
    return target


@dg.sensor(
    name="inbox_sensor",
    minimum_interval_seconds=30,
    description="Adds tasks from files dropped in <data>/inbox/ and scrapes the new ones.",
)
def inbox_sensor(
    context: dg.SensorEvaluationContext, status_store: StatusStoreResource
) -> dg.SensorResult | dg.SkipReason:
    """Read inbox files; store params; add partitions; request `scrape` for the new keys.

    Handled files move to `inbox/done/`; bad lines are logged and written next to the moved
    file as `<file>.errors.txt`, while the file's valid lines are still added.
    """
    layout = status_store.layout()
    files = sorted(
        p for p in layout.inbox_dir.iterdir() if p.is_file() and p.suffix.lower() in SUFFIXES
    )[:MAX_FILES_PER_TICK]
    if not files:
        return dg.SkipReason(f"no task files in {layout.inbox_dir}")
    known = set(context.instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME))
    new_keys: list[str] = []
    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        for path in files:
            report = add_tasks(layout, read_task_file(path), ledger=ledger)
            moved = _move_aside(path, layout.inbox_dir / "done")
            for error in report.errors[:20]:
                context.log.warning(str(error))
            if report.errors:
                text = "".join(f"{e}\n" for e in report.errors)
                moved.with_name(moved.name + ".errors.txt").write_text(text)
            fresh = [k for k in report.keys if k not in known]
            known.update(fresh)
            new_keys.extend(fresh)
            context.log.info(
                f"{path.name}: {report.new} new, {report.unchanged} known, "
                f"{len(report.errors)} refused"
            )
    scrape_key = dg.AssetKey("scrape")
    runs = [
        range_run_request(scrape_key, first, last, reason="inbox")
        for first, last in chunked_ranges(new_keys, RUN_CHUNK_PARTITIONS)
    ]
    return dg.SensorResult(
        run_requests=runs,
        dynamic_partitions_requests=[tasks_partitions_def.build_add_request(new_keys)]
        if new_keys
        else [],
    )


def _rules_from_env() -> RetryRules:
    return RetryRules(
        max_failed_runs=int(os.environ.get("SCRAPEFLOW_RETRY_MAX_FAILED_RUNS", "5")),
        backoff_base_seconds=float(os.environ.get("SCRAPEFLOW_RETRY_BACKOFF_SECONDS", "60")),
    )


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
    now = datetime.now(UTC).replace(tzinfo=None)
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
                failures = (status or {}).get(f"{name}_failures", 0)
                fingerprint.append(f"{key}:f{failures}")
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
    minimum_interval_seconds=60,
    description="Re-runs failed partitions (attempt cap, backoff) and pending downstream steps.",
)
def retry_sensor(
    context: dg.SensorEvaluationContext, status_store: StatusStoreResource
) -> dg.SensorResult | dg.SkipReason:
    """For each executor asset: failed tasks due for a retry plus tasks whose upstream steps
    succeeded, grouped into few range runs; permanent failures and capped tasks are left alone."""
    layout = status_store.layout()
    rules = _rules_from_env()
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
                dg.AssetKey("scrape"),
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
