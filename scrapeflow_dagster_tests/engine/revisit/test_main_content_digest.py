"""The change digest of a page's main content (`change_digest: main_content`), through the chain
(`scrape`, `pages`) against the site's `/changing/noisy/` pages, whose chrome (a menu, a
"Trending now" headline, a "Most read" box, a quote) differs on every request and whose real
changes are known: the whole text's digest takes that chrome for a change at every fetch, the
main content's sees the real changes only."""

import json
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.run.step import run_chain
from scrapeflow_dagster.engine.settings import RevisitSettings, ScrapeSettings
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.lib.scrape_settings import ScrapeSettingsResource
from scrapeflow_dagster.site.content.changing import version_at
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.engine.history.helpers import query
from scrapeflow_dagster_tests.engine.revisit.test_changes import HOUR, set_clock
from scrapeflow_dagster_tests.support.tasks import add_task_file

PAGES = 8
MAIN = RevisitSettings(digest_basis="main_content")


def _settings(revisit: RevisitSettings) -> ScrapeSettings:
    return ScrapeSettings(request_timeout_seconds=5.0, page_main_content=True, revisit=revisit)


def _changes(layout: DataLayout) -> dict[str, int]:
    """Each task's count of changes, as its revisit state keeps it."""
    counts = {}
    for path in layout.status_dir.glob("*.status.json"):
        status = json.loads(path.read_text())
        counts[status["name"]] = status["pages"]["revisit"]["changes"]
    return counts


async def test_noisy_chrome_is_a_change_of_the_whole_text_and_not_of_the_main_content(
    site: LocalSite, tmp_path: Path
) -> None:
    ways = {"text": RevisitSettings(), "main_content": MAIN}
    layouts = {way: DataLayout(tmp_path / way).ensure() for way in ways}
    urls = [f"n{n},{site.url(f'/changing/noisy/{n}')}" for n in range(PAGES)]
    keys = {way: add_task_file(layout, urls) for way, layout in layouts.items()}
    for way, layout in layouts.items():
        await run_chain(layout, [scrape, pages], keys[way], settings=_settings(ways[way]))

    # The site's clock has not moved: no page changed, yet every fetch shows other chrome.
    for way, layout in layouts.items():
        await run_chain(
            layout, [scrape, pages], keys[way], settings=_settings(ways[way]), max_age_seconds=0
        )
    assert set(_changes(layouts["text"]).values()) == {1}  # a false change per page
    assert set(_changes(layouts["main_content"]).values()) == {0}
    digest = json.loads((layouts["main_content"].status_dir / "n0.status.json").read_text())
    assert digest["pages"]["text_digest"].startswith("main:")

    # Two site days on: the main content's digest finds exactly the pages the site changed.
    later = 48 * HOUR
    await set_clock(site, later)
    layout = layouts["main_content"]
    await run_chain(
        layout, [scrape, pages], keys["main_content"], settings=_settings(MAIN), max_age_seconds=0
    )
    changed = {f"n{n}": int(version_at(n, later) > 0) for n in range(PAGES)}
    assert 0 < sum(changed.values()) < PAGES  # the default mix: some change, some never do
    assert _changes(layout) == changed
    rows = query(layout.db_path, "SELECT key FROM changes ORDER BY key")
    assert [key for (key,) in rows] == sorted(k for k, v in changed.items() if v)


async def test_a_digest_of_another_basis_is_no_change(site: LocalSite, tmp_path: Path) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    urls = [f"n{n},{site.url(f'/changing/noisy/{n}')}" for n in range(3)]
    keys = add_task_file(layout, urls)
    await run_chain(layout, [scrape, pages], keys, settings=_settings(RevisitSettings()))
    # A user turns the main content's digest on for these noisy pages: the first digest of
    # the new basis is compared with none, and the site has not changed them.
    await run_chain(layout, [scrape, pages], keys, settings=_settings(MAIN), max_age_seconds=0)
    assert set(_changes(layout).values()) == {0}
    assert query(layout.db_path, "SELECT count(*) FROM changes") == [(0,)]
    await run_chain(layout, [scrape, pages], keys, settings=_settings(MAIN), max_age_seconds=0)
    assert set(_changes(layout).values()) == {0}


def test_a_main_content_digest_needs_the_main_content() -> None:
    with pytest.raises(ValueError, match="change_digest: main_content needs page_main_content"):
        ScrapeSettings(revisit=MAIN)
    with pytest.raises(ValueError, match="change_digest must be one of text, main_content"):
        RevisitSettings(digest_basis="html")
    built = ScrapeSettingsResource(page_main_content=True, change_digest="main_content").build()
    assert built.revisit.digest_basis == "main_content"
    assert ScrapeSettingsResource().build().revisit.digest_basis == "text"
