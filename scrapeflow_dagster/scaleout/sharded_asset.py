"""A sharded variant of an executor asset: its run's partitions split into shards that are
separate steps, so that Dagster's executors (multiprocess, Celery) run them on several cores or
machines.

The asset is graph-backed: `<name>_plan` splits the run's sorted partition keys into disjoint
slices (one `DynamicOutput` each), one `<name>_shard` step per slice runs the engine over it and
logs its own successes (a materialisation per partition, with the same metadata as the
unsharded asset) and failures (an observation per partition), and `<name>_collect` reports the
`no_failed_tasks` check over the whole run and fails the run if any task failed.

Dagster marks a partition FAILED when the run that planned it failed and nothing materialised
it since (`build_failed_and_in_progress_partition_subset`), whichever step failed: so exactly
the failed tasks end FAILED, the rest MATERIALIZED, as with the unsharded asset.
"""

import inspect
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import dagster as dg

from scrapeflow_dagster.defs.executor_assets import (
    CHECK_NAME,
    GROUP_NAME,
    MESSAGE_CHARS,
    StepConfig,
    add_partition_metadata,
    check_result,
    failure_metadata,
    partition_metadata,
    release_not_attempted,
    run_executor_step,
)
from scrapeflow_dagster.defs.partitions import tasks_partitions_def
from scrapeflow_dagster.defs.resources import (
    ProxyProviderResource,
    ScrapeSettingsResource,
    StatusStoreResource,
)
from scrapeflow_dagster.engine.executor import Executor, executor_name
from scrapeflow_dagster.engine.run.step import StepReport
from scrapeflow_dagster.scaleout.shards import (
    SHARD_IO_MANAGER_KEY,
    SHARD_REPORTS_DIR,
    ShardPlan,
    ShardSettingsResource,
    remove_shard_reports,
    split_keys,
)

SHARD_OP_TAGS = {"scrapeflow/shard": "true"}


def merge_reports(executor: str, reports: Sequence[StepReport]) -> StepReport:
    """One report for the whole run from the reports of its shards (disjoint keys)."""
    merged = StepReport(executor=executor)
    for report in reports:
        merged.succeeded.update(report.succeeded)
        merged.errors.update(report.errors)
        merged.not_ready.extend(report.not_ready)
    return merged


def log_shard_events(
    context: dg.OpExecutionContext, asset_key: dg.AssetKey, report: StepReport
) -> None:
    """A materialisation per succeeded partition and an observation per failed one, logged by
    the shard that ran them (so a shard that finished keeps its successes even if another one
    dies)."""
    for key, done in report.succeeded.items():
        context.log_event(
            dg.AssetMaterialization(
                asset_key=asset_key, partition=key, metadata=partition_metadata(done)
            )
        )
    for key, result in report.errors.items():
        context.log_event(
            dg.AssetObservation(
                asset_key=asset_key,
                partition=key,
                description=f"{result.error_class}: {result.message}"[:MESSAGE_CHARS],
                metadata=failure_metadata(result),
            )
        )


def _runs_downstream(context: dg.OpExecutionContext, asset_key: dg.AssetKey) -> bool:
    """Whether the run also materialises an asset downstream of `asset_key` (a chain run)."""
    layer = context.job_def.asset_layer
    # `dg.materialize` leaves the run's selection empty: then the job is the selection.
    selected = context.run.asset_selection or layer.executable_asset_keys
    return bool(layer.asset_graph.get(asset_key).child_keys & set(selected))


def sharded_executor_asset(
    executor: Executor,
    *,
    name: str | None = None,
    requires: Sequence[str] = (),
    description: str | None = None,
) -> dg.AssetsDefinition:
    """A partitioned asset (over `tasks`) that runs `executor` in shards, one step per shard.

    Same name, partitions, run config (`ops: {<name>: {config: {force: ...}}}`), check and
    per-partition metadata as `executor_asset(executor, ...)`; the number of shards comes from
    the `shard_settings` resource, and the definitions need the resources of
    `scaleout.shards.shard_resources()`.

    Args:
        executor: an engine executor (`taskify`-decorated function); its name is the asset's.
        name: asset name when it should differ from the executor's (status files use it too).
        requires: upstream executor assets that must have succeeded for a task first.
        description: shown in the UI; defaults to the executor's docstring.
    """
    asset_name = name or executor_name(executor)
    asset_key = dg.AssetKey(asset_name)

    # Upstream executor assets are inputs of the plan step that carry nothing: they order the
    # steps (as `deps` do for `executor_asset`) and show the lineage.
    upstream = {f"after_{n}": dg.AssetKey(req) for n, req in enumerate(requires)}

    @dg.op(
        name=f"{asset_name}_plan",
        ins={arg: dg.In(dg.Nothing) for arg in upstream},
        out=dg.DynamicOut(ShardPlan, io_manager_key=SHARD_IO_MANAGER_KEY),
    )
    def plan(
        context: dg.OpExecutionContext, config: StepConfig, shard_settings: ShardSettingsResource
    ) -> Iterator[dg.DynamicOutput[ShardPlan]]:
        """Split the run's partitions into disjoint shards, one step each."""
        keys = context.partition_keys
        slices = split_keys(keys, shard_settings.shard_count(len(keys)))
        context.log.info(f"{len(keys)} tasks in {len(slices)} shards")
        for index, keys in enumerate(slices):
            shard_plan = ShardPlan(
                index, len(slices), keys, config.force, config.refresh_older_than_seconds
            )
            yield dg.DynamicOutput(shard_plan, mapping_key=f"shard_{index}")

    @dg.op(
        name=f"{asset_name}_shard",
        out=dg.Out(StepReport, io_manager_key=SHARD_IO_MANAGER_KEY),
        tags=SHARD_OP_TAGS,
    )
    def shard(
        context: dg.OpExecutionContext,
        shard_plan: ShardPlan,
        scrape_settings: ScrapeSettingsResource,
        status_store: StatusStoreResource,
        proxy_provider: ProxyProviderResource,
    ) -> StepReport:
        """Run the executor over this shard's tasks and log their outcomes."""
        report = run_executor_step(
            executor,
            shard_plan.keys,
            requires=requires,
            force=shard_plan.force,
            max_age_seconds=shard_plan.max_age_seconds,
            run_id=context.run.run_id,
            scrape_settings=scrape_settings,
            status_store=status_store,
            proxy_provider=proxy_provider,
        )
        context.log.info(
            f"shard {shard_plan.position + 1} of {shard_plan.total}: {report.tasks} tasks\n"
            f"{report.markdown()}"
        )
        log_shard_events(context, asset_key, report)
        return report

    check_output = f"{asset_name}_{CHECK_NAME}"

    @dg.op(
        name=f"{asset_name}_collect",
        out={
            "result": dg.Out(dg.Nothing, is_required=False),
            check_output: dg.Out(is_required=False),
        },
    )
    def collect(
        context: dg.AssetExecutionContext,
        reports: list[StepReport],
        status_store: StatusStoreResource,
    ) -> Iterator[Any]:
        """The check over the whole run; fails the run when any task failed."""
        report = merge_reports(asset_name, reports)
        yield check_result(report)
        failed = report.failed
        if not failed:
            # Nothing reads this run's plans and reports again (a re-execution from failure
            # would, so a failed run keeps them for a while).
            remove_shard_reports(
                status_store.layout().root / SHARD_REPORTS_DIR,
                context.run_id,
                [f"{asset_name}_plan", f"{asset_name}_shard"],
            )
        if failed:
            ordered = sorted(failed)
            sample = ", ".join(ordered[:5])
            # As an unsharded asset: tasks not attempted (upstream missing) stay missing.
            release_not_attempted(
                context, report.not_ready, failed_key=ordered[-1], asset_key=asset_key
            )
            raise dg.Failure(
                description=f"{len(failed)} of {report.tasks} tasks failed (e.g. {sample})",
                metadata={"summary": dg.MetadataValue.md(report.markdown()), "failed": len(failed)},
                allow_retries=False,
            )
        if report.not_ready or not _runs_downstream(context.op_execution_context, asset_key):
            # The shards materialised every partition already; an output would make Dagster
            # write a second materialisation per partition. Without it, assets downstream of
            # this one in the same run are skipped, so it is yielded only when the run has
            # some (a chain run), with the same metadata.
            return
        add_partition_metadata(
            context, {key: partition_metadata(done) for key, done in report.succeeded.items()}
        )
        yield dg.Output(None, output_name="result")

    def compose(**after: Any) -> Any:
        return collect(plan(**after).map(shard).collect())

    compose.__name__ = asset_name
    # Dagster reads a graph's inputs from its signature: one keyword per upstream asset.
    compose.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY) for arg in upstream]
    )
    # `backfill_policy` is beta in the pinned Dagster: the notice says nothing to our users.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        return dg.graph_asset(
            name=asset_name,
            partitions_def=tasks_partitions_def,
            ins={
                arg: dg.AssetIn(key=key, dagster_type=dg.Nothing) for arg, key in upstream.items()
            },
            config=dg.ConfigMapping(
                config_fn=lambda step_config: {f"{asset_name}_plan": {"config": step_config}},
                config_schema=StepConfig.to_config_schema(),
            ),
            backfill_policy=dg.BackfillPolicy.single_run(),
            check_specs=[dg.AssetCheckSpec(CHECK_NAME, asset=asset_name)],
            description=description or inspect.getdoc(executor),
            group_name=GROUP_NAME,
            kinds={"python"},
        )(compose)
