"""`run_crawl`: a crawl's rounds in this process, each one real Dagster run of the executor chain
(started here, against the instance) over the crawl's tasks not parsed yet, then a discovery
over the pages it parsed, until nothing in the crawl is left to run.

Killed at any point and run again, a crawl goes on where it stopped: pages whose chain
completed are not fetched again (the status files say so), discovered tasks not yet run are
run (their batches wait in the frontier journal), and a task parsed by a run that was killed
before Dagster stored its events is run once more (every step skipped, its partitions
materialised), so no partition stays "in progress" for good.
"""

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO

import dagster as dg

from scrapeflow_dagster.crawling.frontier import SYNC_LOCK_TIMEOUT_SECONDS, take_in
from scrapeflow_dagster.crawling.runs import LocationRuns
from scrapeflow_dagster.defs.partitions import add_task_partitions, tasks_partitions_def
from scrapeflow_dagster.engine.crawl import finish_batch, pending_batches
from scrapeflow_dagster.engine.crawl.discover import PAGES_EXECUTOR as LINKS_ASSET
from scrapeflow_dagster.engine.errors import StatusFileError
from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.redact import redact
from scrapeflow_dagster.engine.retry.ranges import plan_ranges
from scrapeflow_dagster.engine.state.files import load_status
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.schema import executor_names, fields_of, is_success


@dataclass
class Round:
    """What one round did, in tasks (never in Dagster runs)."""

    number: int
    tasks: int  # the crawl's tasks it took up
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
) -> CrawlResult:
    """Run rounds until no task of the crawls of `seeds` is left to run, the first over the
    seeds and the `reopened` pages (a crawl grown in place).

    Args:
        runs: where the runs start (the code location, the instance).
        assets: the executor assets to run, upstream first (every one: a page must be parsed
            for its links to be followed).
        log: takes Dagster's output of the runs.
        on_round: called after each round (the CLI prints it).
    """
    crawls = set(seeds)
    attempted: set[str] = set()
    result = CrawlResult()
    todo = [*seeds, *reopened]
    settings = runs.scrape_settings()
    while True:
        batches = [b for b in pending_batches(layout) if crawls & set(b.crawls)]
        todo += [k for b in batches for k in b.keys]
        todo = [k for k in dict.fromkeys(todo) if k not in attempted]
        if not todo:
            result.seen = len(attempted)
            return result
        to_run, failed_runs = _run_round(layout, runs, todo, assets, log)
        result.ran += len(to_run)
        attempted.update(todo)
        # No DuckDB sync here: the next round's run ingests the spool as it ends, and the
        # last round (it adds no task) syncs below.
        found = take_in(layout, todo, links_asset=LINKS_ASSET, settings=settings, sync=False)
        if not found.keys:
            sync_quietly(layout)
        for batch in batches:
            finish_batch(layout, batch.id)  # its tasks have run
        done = Round(
            number=len(result.rounds),
            tasks=len(todo),
            ran=len(to_run),
            parsed=sum(_parsed(layout, k) for k in to_run),
            failed=failed_tasks(layout, to_run),
            links=Counter(found.outcomes),
            new_tasks=len(found.keys),
            failed_runs=failed_runs,
        )
        result.rounds.append(done)
        if on_round is not None:
            on_round(done)
        todo = []


def sync_quietly(layout: DataLayout) -> None:
    """Ingest the spool into DuckDB, waiting a little for a user's open session; the rows stay
    in the spool when it is held (the next sync takes them)."""
    ledger = Ledger(layout.db_path, spool_dir=layout.spool_dir)
    ledger.close(lock_timeout_seconds=SYNC_LOCK_TIMEOUT_SECONDS)


def _run_round(
    layout: DataLayout,
    runs: LocationRuns,
    keys: list[str],
    assets: Sequence[str],
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
        failed += not runs.run_range(assets, first, last, tasks=tasks, log=log)
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
