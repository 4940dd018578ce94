"""Discovery and robots.txt, against the bundled site after a real engine run over `/graph/0`:
a link the cached robots.txt disallows is recorded `disallowed` and never becomes a task (so its
scrape cannot end DISALLOWED and hold back its run's later assets); without a fresh cached copy,
or when robots.txt is not respected, links are judged as before and the run checks."""

import shutil
from collections.abc import AsyncIterator

import pytest

from scrapeflow_dagster.engine.crawl import discover
from scrapeflow_dagster.engine.crawl.discovery.discover import Discovery
from scrapeflow_dagster.engine.executor import execute_async
from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.executors.validation import validation
from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.polite.robots import robots_cache_dir
from scrapeflow_dagster.engine.settings import PoliteSettings, ScrapeSettings
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.crawling.graph import PRIVATE_PREFIX
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.conftest import fast_settings
from scrapeflow_dagster_tests.engine.crawl.helpers import frontier, params_of, seed


@pytest.fixture
async def site() -> AsyncIterator[LocalSite]:
    async with LocalSite(pages=20, page_bytes=500) as running:
        yield running


async def _crawl_root(site: LocalSite, layout: DataLayout) -> str:
    """Store `/graph/0` as a seed and run scrape, validation and pages over it for real."""
    root = seed(layout, site.url("/graph/0"), max_depth=3)
    done = await execute_async(
        [scrape, validation, pages], layout.status_dir, [root], settings=fast_settings()
    )
    assert done == [root]
    return root


def _discover(layout: DataLayout, root: str, settings: ScrapeSettings | None) -> Discovery:
    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        return discover(layout, [root], ledger=ledger, settings=settings)


def _private(url: str) -> bool:
    return PRIVATE_PREFIX in url


async def test_links_the_cached_robots_txt_disallows_never_become_tasks(
    site: LocalSite, layout: DataLayout
) -> None:
    root = await _crawl_root(site, layout)
    assert list(robots_cache_dir(layout.status_dir).glob("*.json"))  # the run cached it

    found = _discover(layout, root, None)  # the defaults, as the run used
    rows = frontier(layout)
    private = [row for row in rows if _private(row["url"])]
    assert private and {row["outcome"] for row in private} == {"disallowed"}
    assert all(row["child"] is not None for row in private)  # still named, for queries
    assert found.outcomes["disallowed"] == len(private)
    urls = [params_of(layout, key)["url"] for key in found.keys]
    assert not [url for url in urls if _private(url)]
    # The public children of the root are added as before.
    assert {site.url(f"/graph/{n}") for n in (1, 2, 3)} <= set(urls)


@pytest.mark.parametrize(
    "case, polite",
    [
        ("no cached copy", None),
        ("a stale copy", PoliteSettings(robots_max_age_seconds=0)),
        ("robots.txt not respected", PoliteSettings(respect_robots_txt=False)),
    ],
)
async def test_without_a_fresh_cached_robots_txt_links_are_added_as_before(
    site: LocalSite, layout: DataLayout, case: str, polite: PoliteSettings | None
) -> None:
    root = await _crawl_root(site, layout)
    if case == "no cached copy":
        shutil.rmtree(robots_cache_dir(layout.status_dir))

    found = _discover(layout, root, polite and ScrapeSettings(polite=polite))
    private = [row for row in frontier(layout) if _private(row["url"])]
    assert private and {row["outcome"] for row in private} == {"added"}, case
    urls = {params_of(layout, key)["url"] for key in found.keys}
    assert {row["url"] for row in private} <= urls
    assert "disallowed" not in found.outcomes
