"""The frontier sensor: links of parsed pages become tasks, partitions and runs (daemon mode)."""

from collections.abc import Sequence

import dagster as dg

from scrapeflow_dagster.defs.automation import (
    MAX_RUNS_PER_TICK,
    ExecutorChain,
    interval_seconds,
    range_run_requests,
    run_exists,
    spread_ranges,
)
from scrapeflow_dagster.engine.crawl import FrontierBatch, finish_batch, pending_batches
from scrapeflow_dagster.engine.crawl.frontier.expanded_and_added import expanded_keys
from scrapeflow_dagster.engine.retry.ranges import plan_ranges
from scrapeflow_dagster.lib.link_intake import register, take_in
from scrapeflow_dagster.lib.partitions import (
    TASKS_PARTITIONS_NAME,
    tasks_partitions_def,
)
from scrapeflow_dagster.lib.resources import StatusStoreResource
from scrapeflow_dagster.lib.scrape_settings import ScrapeSettingsResource

# Parents taken in per tick: bounds a tick's time (discovery costs ~0.1-0.4 ms per link).
MAX_PARENTS_PER_TICK = 20_000


def frontier_run_requests(
    instance: dg.DagsterInstance, chain: ExecutorChain, batch: FrontierBatch, ordered: Sequence[str]
) -> list[dg.RunRequest]:
    """Runs of the whole chain over the batch's keys (in partition order, few ranges; a large
    range cut into as many runs as the instance's run queue starts at a time).

    The run keys depend only on the batch id and its ranges, which do not move once its keys
    are partitions (partitions are only appended), and on the queue's limit: a killed tick
    asks for the same runs again and the daemon launches each run key once.
    """
    ranges = spread_ranges(instance, ordered, plan_ranges(ordered, batch.keys, passable=set()))
    return range_run_requests(
        chain, chain.keys, ranges, ordered, reason="frontier", fingerprint=batch.id
    )


def build_frontier_sensor(
    executor_assets: Sequence[dg.AssetsDefinition],
    *,
    links_asset: str = "pages",
    in_process_small_runs: bool = False,
) -> dg.SensorDefinition:
    """The frontier sensor over `executor_assets` (upstream first; `links_asset` is the one
    whose output lists a page's `links`, the shipped `pages`). `in_process_small_runs`: see
    `ExecutorChain`.

    Raises:
        ValueError: when no asset of the chain is named `links_asset`.
    """
    chain = ExecutorChain.of(executor_assets, in_process_small_runs=in_process_small_runs)
    links_key = dg.AssetKey(links_asset)
    if links_key not in chain.keys:
        raise ValueError(f"no executor asset {links_asset!r} among {chain.keys}")

    @dg.sensor(
        name="frontier_sensor",
        minimum_interval_seconds=interval_seconds(30),
        target=chain.keys,
        description="Turns links of parsed pages into tasks within each crawl's depth and scope, "
        "and materialises them.",
    )
    def frontier_sensor(
        context: dg.SensorEvaluationContext,
        status_store: StatusStoreResource,
        scrape_settings: ScrapeSettingsResource,
    ) -> dg.SensorResult | dg.SkipReason:
        """Take in the links of pages parsed since the last tick (`discover`: scope, depth,
        dedupe, budget; rows in the DuckDB `frontier` table), add the new tasks as partitions,
        then request runs of every executor asset over them.

        A discovery is a batch in `<data>/frontier/batches/` until Dagster has created its
        runs: a killed tick finds it again, re-adds its partitions (a no-op) and asks for the
        same run keys.
        """
        layout = status_store.layout()
        instance = context.instance
        ordered = instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME)
        statuses = instance.get_status_by_partition(links_key, ordered, tasks_partitions_def)
        parsed = [
            k for k, s in (statuses or {}).items() if s == dg.AssetPartitionStatus.MATERIALIZED
        ]
        expanded = expanded_keys(layout)
        todo = [k for k in parsed if k not in expanded][:MAX_PARENTS_PER_TICK]
        if todo:
            # The runs' User-Agent and robots settings: links robots.txt disallows (as the
            # runs cached it) never become tasks. `scrapeflow crawl` takes links in the same way.
            found = take_in(layout, todo, links_asset=links_asset, settings=scrape_settings.build())
            if found.parents:
                context.log.info(
                    f"{found.parents} parsed pages: {len(found.keys)} new tasks; links by "
                    f"outcome {found.outcomes}"
                )
        runs: list[dg.RunRequest] = []
        for batch in pending_batches(layout):
            if len(runs) >= MAX_RUNS_PER_TICK:
                break
            if batch.streamed_by and _in_progress(instance, batch.streamed_by):
                continue  # its tasks joined that run's pass: never a second run of them
            ordered = register(instance, batch)
            requests = frontier_run_requests(instance, chain, batch, ordered)
            if all(run_exists(instance, r.run_key or "") for r in requests):
                finish_batch(layout, batch.id)
            else:
                runs.extend(requests)
        if not runs:
            return dg.SkipReason(f"no new links in {len(todo)} newly parsed pages")
        return dg.SensorResult(run_requests=runs)

    return frontier_sensor


def _in_progress(instance: dg.DagsterInstance, run_id: str) -> bool:
    """Whether run `run_id` exists and has not ended (a run that took a batch into its pass
    and ended without finishing it stopped early: its batch is the sensor's again)."""
    run = instance.get_run_by_id(run_id)
    return run is not None and not run.is_finished
