"""`discover`: the links of parsed pages become new tasks (the one function both drivers call).

For each parent whose `pages` step succeeded and whose links were not taken in yet, every link
(as the page links it, resolved as a browser resolves it: the URL the new task requests and
the frontier stores) is judged (`scope.Rules`), deduplicated by the fingerprint of its
canonical form (as task keys are) against every task of the data dir and within the batch,
counted against its crawl's
`max_pages`, and recorded as a frontier row. A link that a fresh robots.txt cached by the runs
disallows for our User-Agent is recorded `disallowed` and never becomes a task: in daemon
mode its scrape would end DISALLOWED, unmaterialised, and hold back `validation` and `pages`
for its whole run. Discovery never fetches robots.txt (no copy cached: the run checks).

The whole discovery is first written as a batch file, then applied (tasks stored, rows spooled
for DuckDB, parents marked): a kill at any point is finished by the next discovery, and running
it again over the same parents adds nothing.

Its steps have modules of their own: `parents` (reading them), `planning` (judging their links
into a batch), `applying` (storing it), `discovery_memo` (what successive discoveries reuse)
and `cached_robots`.
"""

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from scrapeflow_dagster.engine.crawl.discovery.applying import apply_batch
from scrapeflow_dagster.engine.crawl.discovery.cached_robots import CachedRobots
from scrapeflow_dagster.engine.crawl.discovery.discovery_memo import DiscoveryMemo
from scrapeflow_dagster.engine.crawl.discovery.parents import read_parents
from scrapeflow_dagster.engine.crawl.discovery.planning import plan_batch
from scrapeflow_dagster.engine.crawl.frontier.batches import (
    FrontierBatch,
    batches,
    frontier_lock,
    save_batch,
)
from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.schema import utc_now

PAGES_EXECUTOR = "pages"


@dataclass(frozen=True)
class Discovery:
    """What one `discover` call did."""

    batch: FrontierBatch | None  # None: no parent had links to take in
    parents: int  # parents whose links were taken in now
    outcomes: dict[str, int]  # links per outcome

    @property
    def keys(self) -> list[str]:
        """The keys of the tasks added (the driver makes them partitions and runs them)."""
        return list(self.batch.keys) if self.batch is not None else []


def discover(
    layout: DataLayout,
    keys: Iterable[str],
    *,
    ledger: Ledger,
    executor: str = PAGES_EXECUTOR,
    now: datetime | None = None,
    settings: ScrapeSettings | None = None,
    streamed_by: str | None = None,
    memo: DiscoveryMemo | None = None,
) -> Discovery:
    """Take in the links of `keys` whose `executor` step succeeded and that were not taken in.

    Keys whose page is not parsed (yet) are left for a later call; tasks that are not part of
    a crawl (`max_depth` 0 and no `crawl`) are marked without a row. New tasks get the crawl
    settings of their parent with `depth` + 1, `parent` and `crawl`, and the trust the parent's
    page hands its links (`state.trust`: public unless `scrape` fetched it from an internal
    address for an intranet task). Batches left unapplied by a killed discovery are applied
    first.

    Args:
        layout: the data dir (status files, the frontier's files).
        keys: candidate parents.
        ledger: where new tasks and frontier rows are recorded for DuckDB (flushed here).
        executor: the executor whose output holds `links`.
        now: the discovery time recorded on rows (default now).
        settings: the runs' settings: their User-Agent and politeness say which links the
            robots.txt copies they cached disallow (default: the defaults runs use).
        streamed_by: the run that takes the new tasks into its own pass (a crawl streamed
            through one run): the batch says so from its first write, so no other driver
            (the frontier sensor) runs them too.
        memo: kept by a caller that discovers again and again in one process (a crawl
            streamed through one run); default: the folder is read afresh.

    Returns:
        The batch applied (its `keys` are the new tasks; the driver calls
        `batches.finish_batch` once they are partitions with runs), and counts.

    Raises:
        OSError: when the data dir cannot be read or written (nothing is lost: the batch is
            applied by the next discovery).
        ValueError: naming a frontier batch file that cannot be read.
    """
    memo = memo if memo is not None else DiscoveryMemo()
    with frontier_lock(layout):
        for batch in batches(layout):
            if not batch.applied:
                memo.refresh(layout)
                apply_batch(layout, batch, ledger, memo.keys)
        expanded = memo.expanded_keys(layout)
        todo = [k for k in dict.fromkeys(keys) if k not in expanded]
        parents, not_crawled = read_parents(layout, todo, executor)
        if not parents and not not_crawled:
            return Discovery(None, 0, {})
        robots = CachedRobots(layout.status_dir, settings or ScrapeSettings())
        memo.refresh(layout)
        batch = plan_batch(layout, parents, now or utc_now(), robots, memo)
        batch.parents += not_crawled
        batch.streamed_by = streamed_by
        save_batch(layout, batch)
        apply_batch(layout, batch, ledger, memo.keys)
    return Discovery(batch, len(parents), dict(Counter(row["outcome"] for row in batch.rows)))
