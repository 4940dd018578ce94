"""Executor assets: an engine executor as a partitioned Dagster asset, and a chain of them as one
step.

One step handles all the run's partitions concurrently through the engine. With several
executors selected (`chain_asset`), each task goes down the chain in one pass (`scrape`, then
`validation`, then `pages`) as far as it gets: a task failing at `scrape` leaves its
`validation` and `pages` missing, not failed. The events (one per partition and asset) and the
run's failure are written by `executor_events`.
"""

import inspect
import warnings
from collections.abc import Iterator, Sequence

import dagster as dg

from scrapeflow_dagster.engine.executor import Executor, declared_output, executor_name
from scrapeflow_dagster.engine.history.reading.frames import transform_structure
from scrapeflow_dagster.engine.run.step import StepReport
from scrapeflow_dagster.lib.chain import (
    ChainLink,
    ChainSelection,
    StepConfig,
    chain_node_name,
    check_chain,
    remember_link,
    run_selection,
    select_links,
)
from scrapeflow_dagster.lib.executor_events import (
    CHECK_NAME,
    MESSAGE_CHARS,
    finish_run,
    log_outcome,
    run_keys,
)
from scrapeflow_dagster.lib.partition_events import materialization_logger
from scrapeflow_dagster.lib.partitions import tasks_partitions_def
from scrapeflow_dagster.lib.resources import ProxyProviderResource, StatusStoreResource
from scrapeflow_dagster.lib.run_growth import RunGrowth, follows_links
from scrapeflow_dagster.lib.scrape_settings import ScrapeSettingsResource
from scrapeflow_dagster.lib.table_metadata import (
    COLUMN_SCHEMA,
    HeldBack,
    output_schema,
    table_metadata,
)
from scrapeflow_dagster.storage.dagster_internals.version_guard import unverified_versions

GROUP_NAME = "scraping"

__all__ = [
    "CHECK_NAME",
    "GROUP_NAME",
    "MESSAGE_CHARS",
    "StepConfig",
    "chain_asset",
    "chain_description",
    "chain_specs",
    "declared_schema",
    "executor_asset",
    "link_for",
    "run_and_log",
]


def link_for(
    executor: Executor,
    *,
    name: str | None,
    requires: Sequence[str],
    description: str | None,
) -> ChainLink:
    """The chain link of `executor` (asset name, requirements, UI description)."""
    return ChainLink(
        executor=executor,
        name=name or executor_name(executor),
        requires=tuple(requires),
        description=description or inspect.getdoc(executor) or "",
    )


def chain_specs(links: Sequence[ChainLink]) -> list[dg.AssetSpec]:
    """One asset spec per link: partitioned over `tasks`, after what it requires."""
    return [
        dg.AssetSpec(
            link.name,
            deps=list(link.requires),
            description=link.description,
            group_name=GROUP_NAME,
            kinds={"python"},
            partitions_def=tasks_partitions_def,
            skippable=True,
            metadata=declared_schema(link.executor),
        )
        for link in links
    ]


def declared_schema(executor: Executor) -> dict[str, dg.TableSchema]:
    """The asset's column schema when its executor declares its output (`declares_output`)."""
    declared = declared_output(executor)
    if declared is None:
        return {}
    return {COLUMN_SCHEMA: output_schema(transform_structure(declared))}


def chain_description(links: Sequence[ChainLink]) -> str:
    """What the chain step does, for the UI."""
    order = " -> ".join(link.name for link in links)
    return (
        f"Runs {order} per task, each task as far down the chain as it gets in the run (the "
        "selected assets only; a failure stops that task alone)."
    )


def run_and_log(
    context: dg.OpExecutionContext | dg.AssetExecutionContext,
    selection: ChainSelection,
    keys: Sequence[str],
    *,
    force: bool,
    max_age_seconds: float | None,
    resources: tuple[ScrapeSettingsResource, StatusStoreResource, ProxyProviderResource],
    label: str = "",
    follow_links: bool = False,
) -> dict[str, StepReport]:
    """Run `selection` over `keys` (`chain.run_selection`), log each task's event as it ends
    and each asset's counts once done (`label` before them, e.g. the shard). With
    `follow_links` (and `pages` selected), the links of the pages parsed become tasks of the
    same run as it goes (`run_growth`); the reports name them too. Each asset's last
    materialisation carries its table's row count and columns (`table_metadata`)."""
    scrape_settings, status_store, proxy_provider = resources
    unverified = unverified_versions()
    if unverified is not None:
        context.log.warning(f"{label}{unverified} (docs/compatibility.md)")
    materialize = HeldBack(materialization_logger(context))
    grow = None
    if follow_links and follows_links(selection.names, selection.requires):
        grow = RunGrowth(context, status_store.layout(), scrape_settings.build(), selection.names)
    try:
        reports = run_selection(
            selection,
            keys,
            force=force,
            max_age_seconds=max_age_seconds,
            run_id=context.run.run_id,
            scrape_settings=scrape_settings,
            status_store=status_store,
            proxy_provider=proxy_provider,
            on_outcome=lambda name, key, outcome: log_outcome(
                context, name, key, outcome, materialize=materialize
            ),
            grow=grow,
        )
    except BaseException:
        materialize.finish()  # what the step finished stays materialised
        if grow is not None:
            grow.abandon()
        raise
    materialize.finish(
        table_metadata(status_store.layout().db_path, selection.names, context.run.run_id)
    )
    if grow is not None:
        grow.finish()
    for asset_name, report in reports.items():
        context.log.info(f"{label}{asset_name}: {report.tasks} tasks\n{report.markdown()}")
    return reports


def chain_asset(links: Sequence[ChainLink], *, name: str | None = None) -> dg.AssetsDefinition:
    """The executor assets of `links` (upstream first) as one step that runs the selected ones
    as a chain per task; any subset of them can be selected.

    Args:
        links: the chain, upstream first (each built with `link_for`).
        name: the step's name (default: the asset's own for one link, else `executor_chain`).

    Raises:
        ValueError: naming the executor when the links are not upstream first.
    """
    check_chain(links)
    node = name or chain_node_name([link.name for link in links])

    def _chain(
        context: dg.AssetExecutionContext,
        config: StepConfig,
        scrape_settings: ScrapeSettingsResource,
        status_store: StatusStoreResource,
        proxy_provider: ProxyProviderResource,
    ) -> Iterator[dg.AssetCheckResult]:
        selected = [key.to_user_string() for key in context.selected_asset_keys]
        selection = select_links(links, selected)
        keys = context.partition_keys
        reports = run_and_log(
            context,
            selection,
            keys,
            force=config.force,
            max_age_seconds=config.refresh_older_than_seconds,
            resources=(scrape_settings, status_store, proxy_provider),
            follow_links=config.follow_links,
        )
        yield from finish_run(
            context, reports, run_keys(keys, reports), checks=context.selected_asset_check_keys
        )

    _chain.__name__ = node
    # `backfill_policy` is beta in the pinned Dagster: the notice says nothing to our users.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        return dg.multi_asset(
            name=node,
            specs=chain_specs(links),
            check_specs=[dg.AssetCheckSpec(CHECK_NAME, asset=link.name) for link in links],
            description=links[0].description if len(links) == 1 else chain_description(links),
            backfill_policy=dg.BackfillPolicy.single_run(),
            can_subset=len(links) > 1,
        )(_chain)


def executor_asset(
    executor: Executor,
    *,
    name: str | None = None,
    requires: Sequence[str] = (),
    description: str | None = None,
) -> dg.AssetsDefinition:
    """A partitioned asset (over `tasks`) that runs `executor` for every partition of a run.

    Given to `scrapeflow_definitions` with the other executor assets, it joins their chain
    step (`chain_asset`); alone (in your own `dg.Definitions`) it is a step of its own.

    Args:
        executor: an engine executor (`taskify`-decorated function); its name is the asset's.
        name: asset name when it should differ from the executor's (status files use it too).
        requires: upstream executor assets that must have succeeded for a task first.
        description: shown in the UI; defaults to the executor's docstring.
    """
    link = link_for(executor, name=name, requires=requires, description=description)
    asset = chain_asset([link])
    remember_link(asset, link, sharded=False)
    return asset
