"""A crawl's seeds: read from task files and sitemaps, stored with the crawl's settings (a stored
seed given other settings takes them and its crawl grows in place), and the sitemaps' `lastmod`
kept for refresh decisions. What `scrapeflow crawl` does before its rounds; it only prints.
"""

import asyncio
import dataclasses
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scrapeflow_dagster.engine.crawl.frontier.lastmods import note_lastmods
from scrapeflow_dagster.engine.crawl.seeding.regrow import regrow
from scrapeflow_dagster.engine.crawl.sitemaps.reading import LISTED, SitemapReading, read_sitemaps
from scrapeflow_dagster.engine.gate.opening import open_gate
from scrapeflow_dagster.engine.history import FrontierRow, Ledger
from scrapeflow_dagster.engine.proxies import ProxyProvider
from scrapeflow_dagster.engine.redact import redact
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.params import normalise_crawl_params
from scrapeflow_dagster.engine.state.schema import utc_now
from scrapeflow_dagster.engine.state.trust import FROM_SITEMAP, learned
from scrapeflow_dagster.engine.tasks.adding import add_tasks
from scrapeflow_dagster.engine.tasks.intake import (
    Item,
    LineError,
    TaskSpec,
    build_task,
    read_task_file,
)


def with_options(items: Iterable[Item], options: dict[str, Any]) -> Iterator[Item]:
    """`items` with the crawl option params set where a line does not set them."""
    for item in items:
        if isinstance(item, TaskSpec) and options:
            params = normalise_crawl_params({**options, **item.params})
            item = dataclasses.replace(item, params=params)
        yield item


@dataclass
class SitemapSeeds:
    """The pages sitemaps list, as task lines, and what reading them found."""

    items: list[Item] = field(default_factory=list)
    dated: list[tuple[str, datetime | None, str | None]] = field(
        default_factory=list
    )  # (key, lastmod in UTC, changefreq)
    files: int = 0  # sitemap files read
    problems: list[str] = field(default_factory=list)  # files that could not be read, by URL
    # Every URL a sitemap gave and what became of it, for the `frontier` table.
    rows: list[FrontierRow] = field(default_factory=list)

    @property
    def skipped(self) -> Counter[str]:
        """Entries not followed, by outcome (`other_host`, `refused_address`)."""
        return Counter(row.outcome for row in self.rows if row.outcome != LISTED)


def sitemap_seeds(
    layout: DataLayout,
    files: Sequence[str],
    sitemaps: Sequence[str],
    *,
    robots: bool,
    settings: ScrapeSettings | None = None,
    proxy_provider: ProxyProvider | None = None,
    reread: bool = False,
) -> SitemapSeeds:
    """The pages of `sitemaps` and (with `robots`) of those the robots.txt of the seeds of the
    task files `files` announce, each as the sitemap writes its URL, with the trust it
    inherits (`state.trust`); every file fetched through the gate of the runs over `layout`
    (their robots.txt cache, host slots, `settings` and proxies); a sitemap read within
    robots.txt's max age is taken from its copy unless `reread`."""
    seeds: list[dict[str, Any]] = []
    if robots:
        for name in files:
            seeds += [i.params for i in read_task_file(Path(name)) if isinstance(i, TaskSpec)]
    found = SitemapSeeds()
    if not sitemaps and not seeds:
        return found
    reading = asyncio.run(
        _read(layout, sitemaps, seeds, settings or ScrapeSettings(), proxy_provider, reread)
    )
    found.files, found.problems = len(reading.files), list(reading.problems)
    now = utc_now()
    for line, page in enumerate(reading.pages, start=1):
        params = {"url": page.url, **learned(page.trust, FROM_SITEMAP)}
        item = build_task(params, Path(page.sitemap), line)
        found.items.append(item)
        if not isinstance(item, TaskSpec):
            continue
        found.rows.append(_row(page.url, page.sitemap, LISTED, item.key, now))
        if page.lastmod is not None or page.changefreq is not None:
            # A date without a zone is taken as UTC (the sitemaps protocol's W3C format).
            when = page.lastmod
            if when is not None and when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            found.dated.append((item.key, when, page.changefreq))
    found.rows += [_row(s.url, s.sitemap, s.outcome, None, now) for s in reading.skipped]
    return found


async def _read(
    layout: DataLayout,
    sitemaps: Sequence[str],
    seeds: Sequence[dict[str, Any]],
    settings: ScrapeSettings,
    proxy_provider: ProxyProvider | None,
    reread: bool,
) -> SitemapReading:
    async with open_gate(layout.status_dir, settings, proxy_provider=proxy_provider) as context:
        return await read_sitemaps(context, sitemaps, robots_of=seeds, reread=reread)


def _row(url: str, sitemap: str, outcome: str, key: str | None, now: datetime) -> FrontierRow:
    return FrontierRow(
        crawl=key,
        parent=redact(sitemap),
        url=url,
        depth=0,
        outcome=outcome,
        child=key,
        discovered_at=now,
    )


@dataclass
class AddedSeeds:
    """What storing a crawl's seeds did."""

    keys: list[str]  # the seeds (stored now or before)
    regrown: list[str]  # seeds that took new crawl settings: their crawls grow in place
    reopened: list[str]  # parsed pages of those crawls, to take in again
    errors: list[LineError]  # lines (or whole files: line 0) refused


def add_seeds(
    layout: DataLayout,
    sources: Sequence[Iterable[Item]],
    options: dict[str, Any],
    *,
    dated: Sequence[tuple[str, datetime | None, str | None]] = (),
    frontier: Sequence[FrontierRow] = (),
    sync: bool = True,
) -> AddedSeeds:
    """Store the seeds of `sources` with the crawl `options` (where a line sets none); a stored
    seed (or discovered page) given other crawl settings takes them, and its crawl grows in
    place (`regrow`). The sitemaps' `dated` pages are noted for `scrapeflow refresh`, and
    what became of their entries (`frontier`) recorded for DuckDB.

    Args:
        sync: ingest their DuckDB rows now; False leaves them in the spool for the next sync
            (the crawl's run does one as it ends: 0.05-0.1 s saved before it starts).
    """
    keys: list[str] = []
    updated: list[str] = []
    errors: list[LineError] = []
    ledger = Ledger(layout.db_path, spool_dir=layout.spool_dir, keep_marker=False)
    try:
        for items in sources:
            report = add_tasks(
                layout, with_options(items, options), ledger=ledger, take_crawl_settings=True
            )
            errors += report.errors
            keys += report.keys
            updated += report.updated
        for row in frontier:
            ledger.record_frontier(row)
        updated = list(dict.fromkeys(updated))
        reopened = regrow(layout, updated, ledger=ledger) if updated else []
    finally:
        ledger.close(sync=sync)  # rows recorded before a failure are still worth keeping
    note_lastmods(layout, dated)
    return AddedSeeds(list(dict.fromkeys(keys)), updated, reopened, errors)
