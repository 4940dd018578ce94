"""A sharded chain of executor assets: its run's partitions split into shards that are separate
steps, so that Dagster's executors (multiprocess, Celery) run them on several cores or machines.

The assets are one graph: `<node>_plan` splits the run's sorted partition keys into disjoint
slices (one `DynamicOutput` each), one `<node>_shard` step per slice runs the selected
executors over it as a chain per task and logs its own successes (a materialisation per
partition and asset, with the same metadata as the unsharded step) and failures (an
observation each), and `<node>_collect` reports each asset's `no_failed_tasks` check over the
whole run and fails the run if any task failed, after giving back to "missing" the partitions
an asset did not reach (`executor_events.finish_run`): exactly the failed (asset, partition)
pairs end FAILED, as with the unsharded step.
"""

import inspect
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import dagster as dg

from scrapeflow_dagster.engine.executor import Executor
from scrapeflow_dagster.engine.run.step import StepReport
from scrapeflow_dagster.lib.chain import (
    ChainLink,
    StepConfig,
    chain_node_name,
    check_chain,
    remember_link,
    select_links,
)
from scrapeflow_dagster.lib.executor_assets import (
    GROUP_NAME,
    chain_description,
    declared_schema,
    link_for,
    run_and_log,
)
from scrapeflow_dagster.lib.executor_events import (
    CHECK_NAME,
    finish_run,
    merge_reports,
    run_keys,
)
from scrapeflow_dagster.lib.partitions import tasks_partitions_def
from scrapeflow_dagster.lib.resources import ProxyProviderResource, StatusStoreResource
from scrapeflow_dagster.lib.scrape_settings import ScrapeSettingsResource
from scrapeflow_dagster.scaleout.shards import (
    SHARD_IO_MANAGER_KEY,
    SHARD_OP_TAGS,
    SHARD_REPORTS_DIR,
    ShardPlan,
    ShardSettingsResource,
    remove_shard_reports,
    split_keys,
)


def selected_names(context: dg.OpExecutionContext, links: Sequence[ChainLink]) -> list[str]:
    """The chain's assets this run materialises (an op of a graph-backed asset sees the run's
    selection, not its own)."""
    layer = context.job_def.asset_layer
    # `dg.materialize` leaves the run's selection empty: then the job is the selection.
    selected = context.run.asset_selection or layer.executable_asset_keys
    names = {key.to_user_string() for key in selected}
    return [link.name for link in links if link.name in names]


def selected_checks(context: dg.OpExecutionContext) -> set[dg.AssetCheckKey] | None:
    """The checks this run evaluates (None: every check of the selected assets)."""
    checks = context.run.asset_check_selection
    return None if checks is None else set(checks)


def sharded_chain_asset(
    links: Sequence[ChainLink], *, name: str | None = None
) -> dg.AssetsDefinition:
    """The executor assets of `links` (upstream first) as one graph whose run is split into
    shards, one step each; each shard runs the selected executors as a chain per task.

    The number of shards comes from the `shard_settings` resource, and the definitions need the
    resources of `scaleout.shards.shard_resources()`. The run config is the chain step's
    (`ops: {<name>: {config: {force: ...}}}`).

    Args:
        links: the chain, upstream first (each built with `link_for`).
        name: the graph's name (default: the asset's own for one link, else `executor_chain`).

    Raises:
        ValueError: naming the executor when the links are not upstream first.
    """
    check_chain(links)
    node = name or chain_node_name([link.name for link in links])
    names = [link.name for link in links]
    chain_keys = {link.name for link in links}
    # Requirements outside the chain are inputs of the plan step that carry nothing: they order
    # the steps after those assets' own and show the lineage.
    outside = [req for link in links for req in link.requires if req not in chain_keys]
    upstream = {f"after_{n}": dg.AssetKey(req) for n, req in enumerate(dict.fromkeys(outside))}

    @dg.op(
        name=f"{node}_plan",
        ins={arg: dg.In(dg.Nothing) for arg in upstream},
        out=dg.DynamicOut(ShardPlan, io_manager_key=SHARD_IO_MANAGER_KEY),
    )
    def plan(
        context: dg.OpExecutionContext, config: StepConfig, shard_settings: ShardSettingsResource
    ) -> Iterator[dg.DynamicOutput[ShardPlan]]:
        """Split the run's partitions into disjoint shards, one step each."""
        keys = context.partition_keys
        assets = selected_names(context, links)
        slices = split_keys(keys, shard_settings.shard_count(len(keys)))
        context.log.info(f"{len(keys)} tasks of {', '.join(assets)} in {len(slices)} shards")
        for index, keys in enumerate(slices):
            shard_plan = ShardPlan(
                index,
                len(slices),
                keys,
                config.force,
                config.refresh_older_than_seconds,
                tuple(assets),
                config.follow_links,
            )
            yield dg.DynamicOutput(shard_plan, mapping_key=f"shard_{index}")

    @dg.op(
        name=f"{node}_shard",
        out=dg.Out(dict, io_manager_key=SHARD_IO_MANAGER_KEY),
        tags=SHARD_OP_TAGS,
    )
    def shard(
        context: dg.OpExecutionContext,
        shard_plan: ShardPlan,
        scrape_settings: ScrapeSettingsResource,
        status_store: StatusStoreResource,
        proxy_provider: ProxyProviderResource,
    ) -> dict[str, StepReport]:
        """Run the selected executors over this shard's tasks and log their outcomes."""
        return run_and_log(
            context,
            select_links(links, shard_plan.assets or names),
            shard_plan.keys,
            force=shard_plan.force,
            max_age_seconds=shard_plan.max_age_seconds,
            resources=(scrape_settings, status_store, proxy_provider),
            label=f"shard {shard_plan.position + 1} of {shard_plan.total}, ",
            follow_links=shard_plan.follow_links,
        )

    check_outputs = {f"{link.name}_{CHECK_NAME}": link.name for link in links}

    @dg.op(
        name=f"{node}_collect",
        out={
            **{link.name: dg.Out(dg.Nothing, is_required=False) for link in links},
            **{output: dg.Out(is_required=False) for output in check_outputs},
        },
    )
    def collect(
        context: dg.OpExecutionContext,
        reports: list[dict[str, StepReport]],
        status_store: StatusStoreResource,
    ) -> Iterator[Any]:
        """The checks over the whole run; fails the run when any task failed.

        No asset output: the shards logged every partition's event, and an output would
        materialise every partition of the run a second time.
        """
        assets = selected_names(context, links)
        merged = merge_reports(assets, reports)
        failed = any(report.failed for report in merged.values())
        if not failed:
            # Nothing reads this run's plans and reports again (a re-execution from failure
            # would, so a failed run keeps them for a while).
            remove_shard_reports(
                status_store.layout().root / SHARD_REPORTS_DIR,
                context.run_id,
                [f"{node}_plan", f"{node}_shard"],
            )
        keys = run_keys(context.partition_keys, merged)
        yield from finish_run(context, merged, keys, checks=selected_checks(context))

    def compose(**after: Any) -> Any:
        done = collect(plan(**after).map(shard).collect())
        return {output: getattr(done, output) for output in [*names, *check_outputs]}

    compose.__name__ = node
    # Dagster reads a graph's inputs from its signature: one keyword per outside requirement.
    compose.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY) for arg in upstream]
    )
    graph = dg.graph(
        name=node,
        description=links[0].description if len(links) == 1 else chain_description(links),
        ins={arg: dg.GraphIn() for arg in upstream},
        out={output: dg.GraphOut() for output in [*names, *check_outputs]},
        config=dg.ConfigMapping(
            config_fn=lambda step_config: {f"{node}_plan": {"config": step_config}},
            config_schema=StepConfig.to_config_schema(),
        ),
    )(compose)
    # `backfill_policy` is beta in the pinned Dagster: the notice says nothing to our users.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        # Built from the graph, not `graph_multi_asset`: only this takes the links' deps on
        # one another (every output comes out of the collect step, so Dagster cannot see them).
        return dg.AssetsDefinition.from_graph(
            graph,
            keys_by_input_name=dict(upstream),
            keys_by_output_name={link.name: dg.AssetKey(link.name) for link in links},
            internal_asset_deps={
                link.name: {dg.AssetKey(req) for req in link.requires} for link in links
            },
            partitions_def=tasks_partitions_def,
            group_names_by_output_name=dict.fromkeys(names, GROUP_NAME),
            descriptions_by_output_name={link.name: link.description for link in links},
            metadata_by_output_name={link.name: declared_schema(link.executor) for link in links},
            tags_by_output_name=dict.fromkeys(names, {"dagster/kind/python": ""}),
            backfill_policy=dg.BackfillPolicy.single_run(),
            check_specs=[dg.AssetCheckSpec(CHECK_NAME, asset=link.name) for link in links],
            can_subset=len(links) > 1,
        )


def sharded_executor_asset(
    executor: Executor,
    *,
    name: str | None = None,
    requires: Sequence[str] = (),
    description: str | None = None,
) -> dg.AssetsDefinition:
    """A partitioned asset (over `tasks`) that runs `executor` in shards, one step per shard.

    Same name, partitions, run config (`ops: {<name>: {config: {force: ...}}}`), check and
    per-partition metadata as `executor_asset(executor, ...)`. Given to
    `scrapeflow_definitions` with the other executor assets, it joins their sharded chain
    (`sharded_chain_asset`).

    Args:
        executor: an engine executor (`taskify`-decorated function); its name is the asset's.
        name: asset name when it should differ from the executor's (status files use it too).
        requires: upstream executor assets that must have succeeded for a task first.
        description: shown in the UI; defaults to the executor's docstring.
    """
    link = link_for(executor, name=name, requires=requires, description=description)
    asset = sharded_chain_asset([link])
    remember_link(asset, link, sharded=True)
    return asset
