"""`RunGrowth`: a crawl streamed through one run. The links of each page the run parses are
taken in (`frontier.take_in`, as between rounds) while the run goes on; the new tasks become
partitions, are planned in the run for each asset it materialises, and join the same pass
(`engine.run.feed`), within the crawl's depth, scope and budget as any discovery.

Measured on the bench's 502-page crawl (2026-11-26, 2 cores): Dagster alone costs 4.25 s for
a crawl's four rounds as four runs and 3.11 s as one (`make bench`, "peer"), and no round
waits for its slowest page before the next depth starts.

Each discovery's batch is marked as taken by the run (`streamed_by`): the driver finishes it
once the run is over. A run killed half way leaves its batches pending, and the next crawl
runs what they hold that is not done.
"""

import dataclasses
import threading
from collections.abc import Sequence

import dagster as dg

from scrapeflow_dagster.crawling.frontier import take_in
from scrapeflow_dagster.defs.executor_events import plan_in_run
from scrapeflow_dagster.defs.partitions import add_task_partitions
from scrapeflow_dagster.engine.crawl import journal
from scrapeflow_dagster.engine.crawl.discover import PAGES_EXECUTOR
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.state.layout import DataLayout


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
        self._lock = threading.Lock()  # one discovery at a time (the feed calls one anyway)

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
            )
            if found.batch is None:
                return []
            keys = found.keys
            if keys:
                add_task_partitions(self._context.instance, keys)
                if not plan_in_run(self._context, self._assets, keys):
                    return []  # the driver runs them (its next run takes the pending batch)
            # Kept (a batch without new tasks too) until the driver has counted its links.
            streamed = dataclasses.replace(
                found.batch, children=[], rows=[], streamed_by=self._context.run.run_id
            )
            journal.save_batch(self._layout, streamed)
            return keys


def follows_links(assets: Sequence[str]) -> bool:
    """Whether a step materialising `assets` can follow links: it parses pages."""
    return PAGES_EXECUTOR in assets
