"""`RunGrowth`: a crawl streamed through one run. The links of each page the run parses are
taken in (`link_intake.take_in`, as between rounds) while the run goes on; the new tasks become
partitions, are planned in the run for each asset it materialises, and join the same pass
(`engine.run.feed`), within the crawl's depth, scope and budget as any discovery.

Measured on the bench's 502-page crawl (2026-11-26, 2 cores, `make bench`, "peer"): Dagster
alone costs 4.3 s for one run of every page against 5.3 s for four runs, one per depth, and
no depth waits for the slowest page of the one before.

Each discovery's batch names the run from its first write (`streamed_by`), so the frontier
sensor leaves it to the run. When the pass ends, every task it took in has run: its batches
are finished, and for `scrapeflow crawl` (the run tagged `CRAWL_TAG`) a summary of what it
took in is left in the frontier journal. A pass stopped by an error hands its batches back
(`streamed_by` cleared); a run killed outright leaves them to the next `scrapeflow crawl`,
which runs what they hold that is not done.
"""

import os
import threading
from collections.abc import Sequence

import dagster as dg

from scrapeflow_dagster.engine.crawl import DiscoveryMemo, finish_batch
from scrapeflow_dagster.engine.crawl.discovery.discover import PAGES_EXECUTOR
from scrapeflow_dagster.engine.crawl.frontier.batches import release_batch
from scrapeflow_dagster.engine.crawl.frontier.stream_summaries import save_stream_summary
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.lib.executor_events import plan_in_run
from scrapeflow_dagster.lib.link_intake import take_in
from scrapeflow_dagster.lib.partitions import add_new_task_partitions

# On a run `scrapeflow crawl` starts: its token, under which each step leaves its summary.
CRAWL_TAG = "scrapeflow/crawl"


class RunGrowth:
    """The `grow` function of a run whose step follows links (see the module)."""

    def __init__(
        self,
        context: dg.OpExecutionContext | dg.AssetExecutionContext,
        layout: DataLayout,
        settings: ScrapeSettings | None,
        assets: Sequence[str],
    ) -> None:
        """Args:
        context: the step's context (its run, its instance).
        layout: the data folder the step runs on.
        settings: the run's settings (robots.txt as the run cached it).
        assets: the assets the step materialises, each planned for every new partition.
        """
        self._context = context
        self._layout = layout
        self._settings = settings
        self._assets = list(assets)
        self._run_id = context.run.run_id
        self._lock = threading.Lock()  # one discovery at a time (the feed calls one anyway)
        self._batches: list[str] = []
        self._keys: list[str] = []
        self._outcomes: dict[str, dict[str, int]] = {}
        # The status folder and link identities as earlier calls read them: each call reads
        # only what changed (a run discovers every few pages).
        self._memo = DiscoveryMemo()

    def __call__(self, parsed: list[str]) -> list[str]:
        """Take in the links of `parsed`; returns the keys of the new tasks, each made a
        partition and planned in this run."""
        with self._lock:
            found = take_in(
                self._layout,
                parsed,
                links_asset=PAGES_EXECUTOR,
                settings=self._settings,
                sync=False,
                streamed_by=self._run_id,
                memo=self._memo,
            )
            if found.batch is None:
                return []
            for depth, counts in found.batch.outcomes.items():
                mine = self._outcomes.setdefault(depth, {})
                for outcome, n in counts.items():
                    mine[outcome] = mine.get(outcome, 0) + n
            keys = found.keys
            if not keys:
                return []  # a batch without new tasks is finished at once
            add_new_task_partitions(self._context.instance, keys)
            if not plan_in_run(self._context, self._assets, keys):
                # Not on this Dagster version: the crawl's driver runs them (in rounds).
                release_batch(self._layout, found.batch.id)
                return []
            self._batches.append(found.batch.id)
            self._keys += keys
            return keys

    def finish(self) -> None:
        """The pass ended: every task it took in has run. Its batches are finished and, for
        `scrapeflow crawl`, what it took in is left for the command to report."""
        with self._lock:
            token = self._context.run.tags.get(CRAWL_TAG)
            if token:
                summary = {"keys": self._keys, "outcomes": self._outcomes}
                name = f"{self._run_id}-{os.getpid()}-{threading.get_ident()}"
                save_stream_summary(self._layout, token, name, summary)
            for batch_id in self._batches:
                finish_batch(self._layout, batch_id)
            self._batches = []

    def abandon(self) -> None:
        """The pass stopped on an error: its batches go back to every driver, to run what it
        did not."""
        with self._lock:
            for batch_id in self._batches:
                release_batch(self._layout, batch_id)
            self._batches = []


def follows_links(names: Sequence[str], requires: Sequence[str]) -> bool:
    """Whether a step materialising the chain's `names`, needing `requires` from outside it,
    can follow links: it parses pages and runs new tasks from their start."""
    return PAGES_EXECUTOR in names and not requires
