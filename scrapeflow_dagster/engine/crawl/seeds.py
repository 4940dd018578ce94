"""A crawl's seeds: read from task files and sitemaps, stored with the crawl's settings (a stored
seed given other settings takes them and its crawl grows in place), and the sitemaps' `lastmod`
kept for refresh decisions. What `scrapeflow crawl` does before its rounds; it only prints.
"""

import asyncio
import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scrapeflow_dagster.engine.crawl.journal import note_lastmods
from scrapeflow_dagster.engine.crawl.regrow import regrow
from scrapeflow_dagster.engine.crawl.sitemaps import read_sitemaps
from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.params import normalise_crawl_params
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
    dated: list[tuple[str, datetime]] = field(default_factory=list)  # (key, lastmod, UTC)
    files: int = 0  # sitemap files read
    problems: list[str] = field(default_factory=list)  # files that could not be read, by URL


def sitemap_seeds(
    files: Sequence[str],
    sitemaps: Sequence[str],
    *,
    robots: bool,
    settings: ScrapeSettings | None = None,
) -> SitemapSeeds:
    """The pages of `sitemaps` and (with `robots`) of those the robots.txt of the seeds of the
    task files `files` announce, each as the sitemap writes its URL."""
    seed_urls: list[str] = []
    if robots:
        for name in files:
            seed_urls += [
                i.params["url"] for i in read_task_file(Path(name)) if isinstance(i, TaskSpec)
            ]
    found = SitemapSeeds()
    if not sitemaps and not seed_urls:
        return found
    reading = asyncio.run(read_sitemaps(sitemaps, robots_of=seed_urls, settings=settings))
    found.files, found.problems = len(reading.files), list(reading.problems)
    for line, page in enumerate(reading.pages, start=1):
        item = build_task({"url": page.url}, Path(page.sitemap), line)
        found.items.append(item)
        if isinstance(item, TaskSpec) and page.lastmod is not None:
            # A date without a zone is taken as UTC (the sitemaps protocol's W3C format).
            when = page.lastmod
            found.dated.append((item.key, when if when.tzinfo else when.replace(tzinfo=UTC)))
    return found


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
    dated: Sequence[tuple[str, datetime]] = (),
    sync: bool = True,
) -> AddedSeeds:
    """Store the seeds of `sources` with the crawl `options` (where a line sets none); a stored
    seed (or discovered page) given other crawl settings takes them, and its crawl grows in
    place (`regrow`). The sitemaps' `dated` pages are noted for `scrapeflow refresh`.

    Args:
        sync: ingest their DuckDB rows now; False leaves them in the spool for the next sync
            (the crawl's run does one as it ends: 0.05-0.1 s saved before it starts).
    """
    keys: list[str] = []
    updated: list[str] = []
    errors: list[LineError] = []
    ledger = Ledger(layout.db_path, spool_dir=layout.spool_dir)
    try:
        for items in sources:
            report = add_tasks(
                layout, with_options(items, options), ledger=ledger, take_crawl_settings=True
            )
            errors += report.errors
            keys += report.keys
            updated += report.updated
        updated = list(dict.fromkeys(updated))
        reopened = regrow(layout, updated, ledger=ledger) if updated else []
    finally:
        ledger.close(sync=sync)  # rows recorded before a failure are still worth keeping
    note_lastmods(layout, dated)
    return AddedSeeds(list(dict.fromkeys(keys)), updated, reopened, errors)
