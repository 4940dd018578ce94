"""`change_summary` over a ledger the real chain (`scrape`, `pages`) filled from the site's
`/changing/` pages, whose changes are known (`version_at`): its counts by host, by page and by
day are the site's truth, and its Markdown names the changed pages by the URLs requested."""

from datetime import timedelta
from itertools import pairwise
from pathlib import Path
from statistics import median

import aiohttp
import pytest

from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.history.reading.change_report import (
    BAR_WIDTH,
    NO_CHANGE_YET,
    ChangeSummary,
    change_summary,
)
from scrapeflow_dagster.engine.run.step import run_chain
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.schema import utc_now
from scrapeflow_dagster.site.content.changing import changing_page, version_at
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.support.tasks import add_task_file

HOUR = 3600.0
DAY = 24 * HOUR
# Site times of the fetches after the first (at 0): each finds the changes made since the last.
FETCHED_AT = (48 * HOUR, 60 * HOUR)
PAGES_PER_HOST = 10
# What the revisit rule does to the 7-day first interval at each fetch (`RevisitPolicy`).
CHANGED, UNCHANGED = 0.8, 1.4


async def set_clock(site: LocalSite, seconds: float) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.post(site.url(f"/control/changing/clock?t={seconds}")) as response,
    ):
        assert response.status == 200, await response.text()


def requested_urls(site: LocalSite) -> dict[str, str]:
    """Task key -> URL, half on `127.0.0.1` and half on `localhost` spelled as no canonical
    form would keep it (upper case, a query): the report must show them as written."""
    urls = {f"c{n}": site.url(f"/changing/{n}") for n in range(PAGES_PER_HOST)}
    for n in range(PAGES_PER_HOST, 2 * PAGES_PER_HOST):
        urls[f"c{n}"] = f"http://LocalHost:{site.port}/changing/{n}?b=2&a=Report"
    return urls


def host_of(site: LocalSite, n: int) -> str:
    return f"127.0.0.1:{site.port}" if n < PAGES_PER_HOST else f"localhost:{site.port}"


def changes_of(n: int) -> int:
    """How many changes the fetches at `FETCHED_AT` find in page n: one per fetch that sees a
    version newer than the fetch before did."""
    versions = [version_at(n, t) for t in (0.0, *FETCHED_AT)]
    return sum(after > before for before, after in pairwise(versions))


def interval_of(n: int) -> float:
    """Page n's learned interval after the three fetches, in seconds."""
    versions = [version_at(n, t) for t in (0.0, *FETCHED_AT)]
    factors = [CHANGED if a > b else UNCHANGED for b, a in pairwise(versions)]
    return 7 * DAY * factors[0] * factors[1]


async def changed_ledger(site: LocalSite, root: Path) -> tuple[DataLayout, dict[str, str]]:
    """A data folder whose pages were fetched at site times 0 and `FETCHED_AT`."""
    layout = DataLayout(root).ensure()
    urls = requested_urls(site)
    keys = add_task_file(layout, [f"{k},{u}" for k, u in urls.items()])
    assert keys == list(urls)
    settings = ScrapeSettings(request_timeout_seconds=5.0)
    await run_chain(layout, [scrape, pages], keys, settings=settings)
    for t in FETCHED_AT:
        await set_clock(site, t)
        await run_chain(layout, [scrape, pages], keys, settings=settings, max_age_seconds=0)
    return layout, urls


async def test_the_summary_counts_what_the_site_changed_by_host_page_and_day(
    site: LocalSite, tmp_path: Path
) -> None:
    layout, urls = await changed_ledger(site, tmp_path / "data")
    truth = {f"c{n}": changes_of(n) for n in range(2 * PAGES_PER_HOST)}
    changed = {key: n for key, n in truth.items() if n}
    assert 0 < len(changed) < len(truth) and max(truth.values()) == 2  # a mix, some twice

    summary = change_summary(layout)

    assert summary.changes_total == summary.changes_in_window == sum(truth.values())
    assert summary.pages_changed_in_window == len(changed)
    assert summary.pages_observed == len(truth)
    assert summary.pages_due == 0  # every interval is days long
    intervals = [interval_of(int(key[1:])) for key in truth]
    assert summary.median_interval_hours == pytest.approx(median(intervals) / HOUR)
    hosts: dict[str, tuple[int, int]] = {}
    for key, n in changed.items():
        host = host_of(site, int(key[1:]))
        total, pages_changed = hosts.get(host, (0, 0))
        hosts[host] = (total + n, pages_changed + 1)
    assert {h.host: (h.changes, h.pages_changed) for h in summary.by_host} == hosts
    assert len(hosts) == 2  # both spellings of the site changed
    assert [h.changes for h in summary.by_host] == sorted(
        (n for n, _ in hosts.values()), reverse=True
    )
    assert {p.key: p.changes for p in summary.by_page} == changed
    assert [p.changes for p in summary.by_page] == sorted(changed.values(), reverse=True)
    for page in summary.by_page:
        n = int(page.key[1:])
        assert page.url == urls[page.key]
        assert page.title == changing_page(n, version_at(n, FETCHED_AT[-1])).title
    assert len(summary.by_day) in (7, 8)  # the days the 7-day window touches
    assert summary.by_day[-1][0] == summary.now.date()
    assert sum(n for _, n in summary.by_day) == sum(truth.values())

    text = summary.markdown()
    for key in truth:
        assert (f"| {urls[key]} |" in text) is (key in changed), key
    assert f"| {host_of(site, 0)} | {hosts[host_of(site, 0)][0]} |" in text
    busiest = max(n for _, n in summary.by_day)
    assert f"| {busiest} | {'#' * BAR_WIDTH} |" in text


async def test_the_window_and_the_due_pages_follow_now(site: LocalSite, tmp_path: Path) -> None:
    layout, _ = await changed_ledger(site, tmp_path / "data")
    truth = {n: changes_of(n) for n in range(2 * PAGES_PER_HOST)}
    now = utc_now()

    # Five days on, the pages that changed at both fetches are due (4.48 days), none else.
    later = change_summary(layout, now=now + timedelta(days=5))
    assert later.pages_due == sum(n == 2 for n in truth.values())
    assert later.changes_in_window == later.changes_total == sum(truth.values())
    # Eight days on, the changes are out of the 7-day window; those that changed once are due.
    much_later = change_summary(layout, now=now + timedelta(days=8))
    assert much_later.changes_total == sum(truth.values())
    assert (much_later.changes_in_window, much_later.pages_changed_in_window) == (0, 0)
    assert much_later.by_host == much_later.by_page == []
    assert much_later.pages_due == sum(n > 0 for n in truth.values())
    assert "No change in the window." in much_later.markdown()
    # A nine-day window from eight days on holds them again; the top two pages only.
    top = change_summary(layout, since_days=9, top=2, now=now + timedelta(days=8))
    assert [p.changes for p in top.by_page] == sorted(truth.values(), reverse=True)[:2]
    assert len(top.by_day) in (9, 10)


def test_a_new_data_folder_is_all_zeros(tmp_path: Path) -> None:
    layout = DataLayout(tmp_path / "data").ensure()

    summary = change_summary(layout)

    assert summary == ChangeSummary(
        since_days=7.0,
        now=summary.now,
        changes_total=0,
        changes_in_window=0,
        pages_changed_in_window=0,
        pages_observed=0,
        pages_due=0,
        median_interval_hours=None,
        by_day=[(day, 0) for day, _ in summary.by_day],
    )
    assert summary.by_day and NO_CHANGE_YET in summary.markdown()


@pytest.mark.parametrize(("since_days", "top"), [(0.0, 5), (-1.0, 5), (float("nan"), 5), (7, 0)])
def test_a_bad_window_or_top_is_refused(tmp_path: Path, since_days: float, top: int) -> None:
    with pytest.raises(ValueError, match="since_days|top"):
        change_summary(DataLayout(tmp_path / "data").ensure(), since_days=since_days, top=top)
