"""The inbox sensor: task files dropped in `<data>/inbox/` become partitions and runs."""

from collections.abc import Sequence

import dagster as dg

from scrapeflow_dagster.defs.automation import (
    ExecutorChain,
    interval_seconds,
    promised_sensor_status,
    range_run_requests,
    run_exists,
    spread_ranges,
)
from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.retry.ranges import plan_ranges
from scrapeflow_dagster.engine.tasks.inbox import (
    Batch,
    Skipped,
    finish_batch,
    pending_batches,
    take_waiting_files,
)
from scrapeflow_dagster.lib.partitions import (
    TASKS_PARTITIONS_NAME,
    add_task_partitions,
    tasks_partitions_def,
)
from scrapeflow_dagster.lib.resources import StatusStoreResource

MAX_FILES_PER_TICK = 20
# Dagster gives a sensor evaluation 60 s (DAGSTER_SENSOR_GRPC_TIMEOUT_SECONDS); files are taken
# whole, so no new file is started after this much of it.
INBOX_TICK_BUDGET_SECONDS = 20.0


def plan_first_runs(
    instance: dg.DagsterInstance, root: dg.AssetKey, keys: Sequence[str]
) -> list[tuple[str, str]]:
    """Ranges over those of `keys` whose `root` step never ran (not materialised, failed or in
    progress): a file dropped again asks for nothing new, and failures are the retry
    sensor's. A large range is cut into as many runs as the instance's run queue starts at a
    time; the ranges are written down with the batch, so its run keys never change."""
    ordered = instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME)
    found = instance.get_status_by_partition(root, ordered, tasks_partitions_def) or {}
    never_ran = [key for key in keys if found.get(key) is None]
    materialized = {k for k, s in found.items() if s == dg.AssetPartitionStatus.MATERIALIZED}
    return spread_ranges(instance, ordered, plan_ranges(ordered, never_ran, passable=materialized))


def inbox_run_requests(
    chain: ExecutorChain, batch: Batch, ordered: Sequence[str]
) -> list[dg.RunRequest]:
    """The runs a batch asks for: every executor asset, in order, over each of its ranges
    (of the `ordered` partitions).

    The run keys depend only on the batch, so asking again after a killed tick never
    launches a run twice (the daemon launches a run key once).
    """
    return range_run_requests(
        chain,
        chain.keys,
        batch.ranges,
        ordered,
        reason="inbox",
        fingerprint=f"{batch.digest}:{batch.accepted_at}",
    )


def build_inbox_sensor(
    executor_assets: Sequence[dg.AssetsDefinition], *, in_process_small_runs: bool = False
) -> dg.SensorDefinition:
    """The inbox sensor over `executor_assets` (upstream first; the first one fetches).
    `in_process_small_runs`: see `ExecutorChain`."""
    chain = ExecutorChain.of(executor_assets, in_process_small_runs=in_process_small_runs)

    @dg.sensor(
        name="inbox_sensor",
        minimum_interval_seconds=interval_seconds(30),
        default_status=promised_sensor_status(),
        target=chain.keys,
        description="Adds tasks from files dropped in <data>/inbox/ and materialises them.",
    )
    def inbox_sensor(
        context: dg.SensorEvaluationContext, status_store: StatusStoreResource
    ) -> dg.SensorResult | dg.SkipReason:
        """Take inbox files: store params, add partitions, then request runs of every executor
        asset over the new keys.

        A file leaves the inbox only after its keys are partitions and its runs are written
        down in `inbox/accepted/`; those runs are requested on every tick until Dagster has
        created them. Bad lines are logged and written next to the moved file as
        `<file>.errors.txt`.
        """
        layout = status_store.layout()
        instance = context.instance
        said: list[str] = []  # what this tick did, for the skip reason when it asks for no run
        with Ledger(layout.db_path, spool_dir=layout.spool_dir, keep_marker=False) as ledger:
            for taken in take_waiting_files(
                layout,
                ledger=ledger,
                add_partitions=lambda keys: add_task_partitions(instance, keys),
                plan_first_runs=lambda keys: plan_first_runs(instance, chain.root, keys),
                max_files=MAX_FILES_PER_TICK,
                budget_seconds=INBOX_TICK_BUDGET_SECONDS,
            ):
                if isinstance(taken, Skipped):
                    context.log.warning(taken.reason)
                    said.append(taken.reason)
                    continue
                batch = taken.batch
                for error in taken.errors[:20]:
                    context.log.warning(error)
                line = (
                    f"{batch.source}: {batch.tasks} tasks ({batch.new} new), {batch.refused} "
                    f"refused, {len(batch.ranges)} runs; moved to done/{batch.stored_as}"
                )
                context.log.info(line)
                said.append(line)
        runs: list[dg.RunRequest] = []
        batches = pending_batches(layout)
        ordered = instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME) if batches else []
        for batch in batches:
            requests = inbox_run_requests(chain, batch, ordered)
            if all(run_exists(instance, r.run_key or "") for r in requests):
                finish_batch(layout, batch)
            else:
                runs.extend(requests)
        if not runs:
            if said:  # files were taken (none with tasks to run) or could not be read
                return dg.SkipReason("; ".join(said))
            return dg.SkipReason(f"no task files in {layout.inbox_dir}")
        return dg.SensorResult(run_requests=runs)

    return inbox_sensor
