"""What `scrapeflow crawl` and the frontier sensor share: a discovery over parsed pages with
the runs' own settings (robots.txt as the runs cached it), and the new tasks made partitions.
"""

from collections.abc import Iterable

import dagster as dg

from scrapeflow_dagster.engine.crawl import Discovery, DiscoveryMemo, FrontierBatch, discover
from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.lib.partitions import TASKS_PARTITIONS_NAME, add_task_partitions

# How long a discovery waits for DuckDB held by a user's session before leaving its rows in
# the spool (the next sync takes them): a crawl never stops for an open session.
SYNC_LOCK_TIMEOUT_SECONDS = 2.0


def take_in(
    layout: DataLayout,
    parents: Iterable[str],
    *,
    links_asset: str,
    settings: ScrapeSettings | None,
    sync: bool = True,
    streamed_by: str | None = None,
    memo: DiscoveryMemo | None = None,
) -> Discovery:
    """Turn the links of the parsed pages among `parents` that were not taken in yet into
    tasks and frontier rows (`engine.crawl.discovery.discover`); DuckDB gets the rows when it
    is free.

    Args:
        sync: ingest the rows into DuckDB now; False leaves them in the spool for the next
            sync (a crawl's next run does one as it ends: 0.1-0.3 s saved per round).
        streamed_by: the run whose pass takes the new tasks in (`discover`).
        memo: what the caller's earlier discoveries read (`discover`).
    """
    ledger = Ledger(layout.db_path, spool_dir=layout.spool_dir, keep_marker=False)
    try:
        return discover(
            layout,
            parents,
            ledger=ledger,
            executor=links_asset,
            settings=settings,
            streamed_by=streamed_by,
            memo=memo,
        )
    finally:
        ledger.close(sync=sync, lock_timeout_seconds=SYNC_LOCK_TIMEOUT_SECONDS)


def register(instance: dg.DagsterInstance, batch: FrontierBatch) -> list[str]:
    """Make the batch's tasks partitions (those that are not yet); returns every `tasks`
    partition in order."""
    add_task_partitions(instance, batch.keys)
    return list(instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME))
