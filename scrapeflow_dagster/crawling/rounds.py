"""`run_crawl`: a crawl streamed through one real Dagster run of the executor chain (started
in this process, against the instance): the run takes in the links of each page it parses and
runs the new tasks in the same pass (`lib.run_growth`), so no depth waits for the one before
it to finish and a crawl costs one run, not one per depth. The driver runs that run over the
crawl's tasks not parsed yet, then reports each depth as a round.

Where a run cannot take its links in (a code location whose chain takes no `follow_links`, a
Dagster version the guard does not admit), the same loop goes on in rounds: a discovery over
the pages the run parsed, then a run of the new tasks, until nothing in the crawl is left.

Killed at any point and run again, a crawl goes on where it stopped: pages whose chain
completed are not fetched again (the status files say so), discovered tasks not yet run are
run (their batches wait in the frontier journal), the links of parsed pages not taken in are
taken in first, and a task parsed by a run that was killed before Dagster stored its events is
run once more (every step skipped, its partitions materialised), so no partition stays "in
progress" for good.
"""

import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import dagster as dg

from scrapeflow_dagster.crawling.runs import LocationRuns
from scrapeflow_dagster.engine.crawl import finish_batch, pending_batches
from scrapeflow_dagster.engine.crawl.discovery.discover import PAGES_EXECUTOR as LINKS_ASSET
from scrapeflow_dagster.engine.crawl.frontier.stream_summaries import take_stream_summaries
from scrapeflow_dagster.engine.crawl.scope import ADDED
from scrapeflow_dagster.engine.errors import StatusFileError
from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.history.recording.spool import spool_files
from scrapeflow_dagster.engine.redact import redact
from scrapeflow_dagster.engine.retry.ranges import plan_ranges
from scrapeflow_dagster.engine.state.files import load_status
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.schema import executor_names, fields_of, is_success
from scrapeflow_dagster.lib.chain import chain_node_name
from scrapeflow_dagster.lib.link_intake import SYNC_LOCK_TIMEOUT_SECONDS, take_in
from scrapeflow_dagster.lib.partitions import add_task_partitions, tasks_partitions_def
from scrapeflow_dagster.lib.run_growth import CRAWL_TAG


@dataclass
class Round:
    """What a crawl's run did at one depth, in tasks (never in Dagster runs): a round."""

    number: int  # the depth
    tasks: int  # the crawl's tasks at that depth it took up
    ran: int  # of them, those not parsed already
    parsed: int
    failed: list[tuple[str, str]]  # (URL, the failed step's status) of each failed task
    links: Counter[str]  # links of the parsed pages by outcome
    new_tasks: int
    failed_runs: int


@dataclass
class CrawlResult:
    """A whole crawl: its rounds, the tasks of the crawl seen and how many were run."""

    rounds: list[Round] = field(default_factory=list)
    seen: int = 0
    ran: int = 0


def run_crawl(
    layout: DataLayout,
    runs: LocationRuns,
    seeds: Sequence[str],
    *,
    reopened: Sequence[str] = (),
    assets: Sequence[str],
    log: IO[str] | None = None,
    on_round: Callable[[Round], None] | None = None,
    run_config: Mapping[str, Any] | None = None,
) -> CrawlResult:
    """Run the crawls of `seeds` until none of their tasks is left to run, starting with the
    seeds and the `reopened` pages (a crawl grown in place).

    Args:
        runs: where the runs start (the code location, the instance).
        assets: the executor assets to run, upstream first (every one: a page must be parsed
            for its links to be followed).
        log: takes Dagster's output of the runs.
        on_round: called with each depth's round once its run is over (the CLI prints it).
        run_config: run config of the runs (resources' settings: page text, ...), merged with
            the chain's own (`follow_links`).
    """
    crawls = set(seeds)
    attempted: set[str] = set()
    result = CrawlResult()
    todo = [*seeds, *reopened]
    settings = runs.scrape_settings()
    config = _merged(dict(run_config or {}), _follow_links_config(runs, assets) or {}) or None
    token = uuid.uuid4().hex  # the runs' steps leave what they took in under it
    while True:
        batches = [b for b in pending_batches(layout) if crawls & set(b.crawls)]
        todo += [k for b in batches for k in b.keys]
        todo = [k for k in dict.fromkeys(todo) if k not in attempted]
        if not todo:
            result.seen = len(attempted)
            return result
        # Pages parsed already whose links were never taken in (a crawl grown in place, a run
        # killed before its discovery): their new tasks go into this run.
        found = [take_in(layout, todo, links_asset=LINKS_ASSET, settings=settings, sync=False)]
        todo = list(dict.fromkeys([*todo, *found[0].keys]))
        to_run, failed_runs = _run_round(
            layout, runs, todo, assets, config, {CRAWL_TAG: token}, log
        )
        taken = take_stream_summaries(layout, token)
        streamed = [k for summary in taken for k in summary["keys"]]
        attempted.update(todo)
        attempted.update(streamed)
        result.ran += len(to_run) + len(streamed)
        # No DuckDB sync here: a run ingests the spool as it ends, and the last pass (it adds
        # no task) syncs below. In rounds (or after a run stopped early), this discovery finds
        # the new tasks.
        found.append(
            take_in(
                layout, [*todo, *streamed], links_asset=LINKS_ASSET, settings=settings, sync=False
            )
        )
        if not found[-1].keys:
            sync_quietly(layout)
        for batch in [*batches, found[0].batch]:
            if batch is not None:
                finish_batch(layout, batch.id)  # its tasks have run
        outcomes = [summary["outcomes"] for summary in taken]
        outcomes += [f.batch.outcomes for f in found if f.batch is not None]
        for done in _rounds(
            layout,
            [*todo, *streamed],
            ran={*to_run, *streamed},
            outcomes=outcomes,
            failed_runs=failed_runs,
        ):
            result.rounds.append(done)
            if on_round is not None:
                on_round(done)
        todo = []


def _merged(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `extra` merged into it, dict by dict (`extra` wins on a leaf)."""
    for name, value in extra.items():
        if isinstance(value, Mapping) and isinstance(base.get(name), dict):
            base[name] = _merged(dict(base[name]), value)
        else:
            base[name] = value
    return base


def _follow_links_config(runs: LocationRuns, assets: Sequence[str]) -> dict[str, Any] | None:
    """The run config that has the chain step take in its pages' links, when the location's
    chain takes it (None: the crawl goes in rounds)."""
    node = chain_node_name(list(assets))
    if len(assets) < 2 or not runs.job.graph.has_node_named(node):
        return None
    return {"ops": {node: {"config": {"follow_links": True}}}}


def _rounds(
    layout: DataLayout,
    keys: Sequence[str],
    *,
    ran: set[str],
    outcomes: Sequence[dict[str, dict[str, int]]],
    failed_runs: int,
) -> list[Round]:
    """One round per depth of the tasks of `keys`, the links of its pages counted from the
    discoveries' `outcomes` (per child depth)."""
    by_depth: dict[int, list[str]] = {}
    for key in keys:
        by_depth.setdefault(_depth(layout, key), []).append(key)
    rounds: list[Round] = []
    for depth in sorted(by_depth):
        tasks = by_depth[depth]
        run = [k for k in tasks if k in ran]
        links: Counter[str] = Counter()
        for counts in outcomes:
            links.update(counts.get(str(depth + 1), {}))
        rounds.append(
            Round(
                number=depth,
                tasks=len(tasks),
                ran=len(run),
                parsed=sum(_parsed(layout, k) for k in run),
                failed=failed_tasks(layout, run),
                links=links,
                new_tasks=links.get(ADDED, 0),
                failed_runs=failed_runs if not rounds else 0,
            )
        )
    return rounds


def _depth(layout: DataLayout, key: str) -> int:
    """The crawl depth of task `key` (0: a seed, or unreadable)."""
    try:
        status = load_status(layout.status_dir, key)
    except StatusFileError:
        return 0
    depth = ((status or {}).get("params") or {}).get("depth", 0)
    return depth if isinstance(depth, int) else 0


def sync_quietly(layout: DataLayout) -> None:
    """Ingest the spool into DuckDB, waiting a little for a user's open session; the rows stay
    in the spool when it is held (the next sync takes them). Nothing to ingest (the crawl's
    run took it all as it ended) opens nothing."""
    if layout.db_path.exists() and not spool_files(layout.spool_dir):
        return
    ledger = Ledger(layout.db_path, spool_dir=layout.spool_dir, keep_marker=False)
    ledger.close(lock_timeout_seconds=SYNC_LOCK_TIMEOUT_SECONDS)


def _run_round(
    layout: DataLayout,
    runs: LocationRuns,
    keys: list[str],
    assets: Sequence[str],
    config: dict[str, Any] | None,
    tags: dict[str, str],
    log: IO[str] | None,
) -> tuple[list[str], int]:
    """Make `keys` partitions, then run every asset of the chain once per range of those not
    parsed yet; returns the keys run and how many runs failed."""
    instance = runs.instance
    add_task_partitions(instance, keys)
    ordered = runs.partitions()
    states = instance.get_status_by_partition(dg.AssetKey(LINKS_ASSET), keys, tasks_partitions_def)
    done = {
        k for k, state in (states or {}).items() if state == dg.AssetPartitionStatus.MATERIALIZED
    }
    to_run = [k for k in keys if k not in done or not _parsed(layout, k)]
    position = {key: index for index, key in enumerate(ordered)}
    failed = 0
    for first, last in plan_ranges(ordered, to_run, passable=set()):
        tasks = position[last] - position[first] + 1
        failed += not runs.run_range(
            assets, first, last, tasks=tasks, config=config, log=log, tags=tags
        )
    return to_run, failed


def failed_tasks(layout: DataLayout, keys: Sequence[str]) -> list[tuple[str, str]]:
    """(URL, the failed step's status) of the tasks of `keys` whose last run failed."""
    found = []
    for key in keys:
        try:
            status = load_status(layout.status_dir, key)
        except StatusFileError as exc:
            found.append((key, str(exc)))
            continue
        if status is None:
            continue
        for name in executor_names(status):
            text = str(status.get(fields_of(name).status) or "")
            if text.startswith("ERROR"):
                url = redact(str(status.get("params", {}).get("url", key)))
                found.append((url, f"{name} {text}"))
                break
    return found


def _parsed(layout: DataLayout, key: str) -> bool:
    try:
        status = load_status(layout.status_dir, key)
    except StatusFileError:
        return False
    return status is not None and is_success(status, LINKS_ASSET)
