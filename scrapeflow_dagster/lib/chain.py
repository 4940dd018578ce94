"""The executor chain: which executors an asset step runs, in which order, and what each needs.

Each executor is its own asset, but a run that selects several of them runs them as one chain
per task (scrapeflow's `execute_async(executors=[...])`): a task goes as far down the chain as it
gets in that run, and a failure stops only that task. `executor_asset` and
`sharded_executor_asset` register the link they were built from, so `scrapeflow_definitions`
can join the assets it is given into one chain step (`chain_asset`, `sharded_chain_asset`).
"""

import asyncio
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import dagster as dg

from scrapeflow_dagster.engine.executor import Executor
from scrapeflow_dagster.engine.run.feed import Grow
from scrapeflow_dagster.engine.run.step import OutcomeCallback, StepReport, run_chain
from scrapeflow_dagster.lib.resources import ProxyProviderResource, StatusStoreResource
from scrapeflow_dagster.lib.scrape_settings import ScrapeSettingsResource

# The step (op or graph) that runs a chain of several executors; a chain of one keeps the
# asset's own name, so `ops: {scrape: {config: ...}}` still configures a lone `scrape` asset.
CHAIN_NODE_NAME = "executor_chain"


def chain_node_name(names: Sequence[str]) -> str:
    """The name of the step (op or graph) that runs the chain of executor assets `names`:
    where a run's config goes (`ops: {<this name>: {config: {force: true}}}`)."""
    return names[0] if len(names) == 1 else CHAIN_NODE_NAME


class StepConfig(dg.Config):
    """Run-time choices of a run of executor assets (applied to every selected executor)."""

    force: bool = False  # re-run tasks whose step already succeeded
    refresh_older_than_seconds: float | None = None  # re-run successes older than this
    # Take in the links of the pages the run parses and run the new tasks in the same run (a
    # crawl streamed through one run: `lib.run_growth`); needs `pages` in the selection.
    follow_links: bool = False


@dataclass(frozen=True)
class ChainLink:
    """One executor of a chain and the asset it materialises."""

    executor: Executor
    name: str  # the asset's name, and the executor's name in the status files
    requires: tuple[str, ...]  # executor assets that must have succeeded for a task first
    description: str


@dataclass(frozen=True)
class ChainSelection:
    """What one run executes: the selected links in chain order and what they depend on."""

    links: tuple[ChainLink, ...]
    requires: tuple[str, ...]  # outside the selection: must have succeeded already

    @property
    def names(self) -> list[str]:
        """The selected assets' names, upstream first."""
        return [link.name for link in self.links]

    def step_requires(self) -> dict[str, list[str]]:
        """Per executor, what its output is built from (for freshness)."""
        return {link.name: list(link.requires) for link in self.links}


@dataclass(frozen=True)
class BuiltFrom:
    """How an executor asset was built: its link, and whether it is sharded."""

    link: ChainLink
    sharded: bool


_BUILT_FROM: "weakref.WeakKeyDictionary[dg.AssetsDefinition, BuiltFrom]" = (
    weakref.WeakKeyDictionary()
)


def remember_link(asset: dg.AssetsDefinition, link: ChainLink, *, sharded: bool) -> None:
    """Note that `asset` runs `link` (so `scrapeflow_definitions` can join it into a chain)."""
    _BUILT_FROM[asset] = BuiltFrom(link, sharded)


def built_from(asset: dg.AssetsDefinition) -> BuiltFrom:
    """The link `asset` was built from.

    Raises:
        ValueError: naming the asset when it was not built by `executor_asset` or
            `sharded_executor_asset`.
    """
    found = _BUILT_FROM.get(asset)
    if found is None:
        names = ", ".join(key.to_user_string() for key in asset.keys)
        raise ValueError(
            f"executor asset {names} was not built by executor_asset or sharded_executor_asset:"
            " pass it in `assets` instead"
        )
    return found


def check_chain(links: Sequence[ChainLink]) -> None:
    """Raise `ValueError` naming the executor when the chain is not in dependency order (a
    link requires one listed after it) or names an asset twice."""
    seen: set[str] = set()
    names = {link.name for link in links}
    for link in links:
        if link.name in seen:
            raise ValueError(f"executor asset {link.name!r} is given twice")
        later = [req for req in link.requires if req in names and req not in seen]
        if later:
            raise ValueError(
                f"executor asset {link.name!r} requires {', '.join(later)}, listed after it:"
                " list executor assets upstream first"
            )
        seen.add(link.name)


def select_links(links: Sequence[ChainLink], selected: Sequence[str]) -> ChainSelection:
    """The links of `selected` asset names, in chain order, and what they need from outside
    the selection (a run of `validation` alone needs `scrape` to have succeeded)."""
    wanted = set(selected)
    chosen = tuple(link for link in links if link.name in wanted)
    names = {link.name for link in chosen}
    outside = [req for link in chosen for req in link.requires if req not in names]
    return ChainSelection(chosen, tuple(dict.fromkeys(outside)))


def run_selection(
    selection: ChainSelection,
    keys: Sequence[str],
    *,
    force: bool,
    max_age_seconds: float | None,
    run_id: str,
    scrape_settings: ScrapeSettingsResource,
    status_store: StatusStoreResource,
    proxy_provider: ProxyProviderResource,
    on_outcome: OutcomeCallback | None = None,
    grow: Grow | None = None,
) -> dict[str, StepReport]:
    """Run the selected executors as one chain per task over `keys` with the resources'
    settings (the engine's `run_chain`, one asyncio loop): what a chain step, or one shard of
    it, does. `on_outcome` is called as each task's step ends; `grow` adds tasks to the run
    as they finish (`engine.run.feed`). Returns one report per selected asset name."""
    return asyncio.run(
        run_chain(
            status_store.layout(),
            [link.executor for link in selection.links],
            keys,
            settings=scrape_settings.build(),
            proxy_provider=proxy_provider.build(),
            requires=selection.requires,
            step_requires=selection.step_requires(),
            force=force,
            max_age_seconds=max_age_seconds,
            timeout_seconds=scrape_settings.executor_timeout_seconds,
            max_parallelism=scrape_settings.max_parallelism,
            run_id=run_id,
            on_outcome=on_outcome,
            grow=grow,
        )
    )
