"""Sitemaps seed a crawl, through the real `scrapeflow crawl`: `--sitemap` reads an index, a
plain and a gzipped sitemap and fetches each page as listed; the sitemaps a seed's robots.txt
announces are read too, unless `--no-robots-sitemaps`."""

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.crawling.sitemaps import GZIPPED, INDEX_PATH, PLAIN
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.cli.helpers import Run

LISTED = [path for path, _ in (*PLAIN, *GZIPPED)]


def graph_paths(site: SiteThread) -> dict[str, int]:
    with urllib.request.urlopen(site.url("/control/requests"), timeout=10) as response:
        paths = json.load(response)["paths"]
    return {p: n for p, n in paths.items() if p.startswith("/graph/")}


def stored_urls(layout: DataLayout) -> set[str]:
    with duckdb.connect(str(layout.db_path), read_only=True) as db:
        return {row[0] for row in db.execute("SELECT url FROM tasks").fetchall()}


@pytest.fixture
def announcing_site() -> Iterator[SiteThread]:
    with SiteThread(pages=10, sitemap_in_robots=True) as site:
        yield site


def test_a_sitemap_index_seeds_the_crawl_with_each_page_as_listed(
    run_command: Run, layout: DataLayout
) -> None:
    with SiteThread(pages=10) as site:
        done = run_command(
            "scrapeflow", "crawl", "--sitemap", site.url(INDEX_PATH), "--max-depth", "0"
        )
        fetched = graph_paths(site)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "sitemaps: 3 files read, 3 pages (2 with lastmod)" in done.stdout
    assert fetched == {"/graph/1": 1, "/graph/2": 1, "/graph/3": 1}
    assert stored_urls(layout) == {site.url(path) for path in LISTED}  # `%28map%29` kept


def test_robots_txt_sitemaps_are_read_for_seeds_unless_told_not_to(
    run_command: Run, layout: DataLayout, tmp_path: Path, announcing_site: SiteThread
) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(announcing_site.url("/graph/0") + "\n")

    plain = run_command(
        "scrapeflow", "crawl", str(seeds), "--max-depth", "0", "--no-robots-sitemaps"
    )
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert graph_paths(announcing_site) == {"/graph/0": 1}

    announced = run_command("scrapeflow", "crawl", str(seeds), "--max-depth", "0")

    assert announced.returncode == 0, announced.stdout + announced.stderr
    assert "sitemaps: 3 files read" in announced.stdout
    assert graph_paths(announcing_site) == {f"/graph/{n}": 1 for n in range(4)}
    assert stored_urls(layout) == {announcing_site.url(p) for p in ["/graph/0", *LISTED]}


def test_a_page_its_sitemap_dates_after_the_fetch_is_refreshed_and_no_other(
    run_command: Run, layout: DataLayout
) -> None:
    with SiteThread(pages=10) as site:
        index = site.url(INDEX_PATH)
        first = run_command("scrapeflow", "crawl", "--sitemap", index, "--max-depth", "0")
        assert first.returncode == 0, first.stdout + first.stderr
        calm = run_command("scrapeflow", "refresh")  # nothing stale, nothing dated after
        assert calm.returncode == 0 and calm.stdout.startswith("nothing to refresh"), calm.stdout

        # The site changes /graph/3 and dates it anew in its (gzipped) sitemap.
        request = urllib.request.Request(
            site.url("/control/lastmod?path=/graph/3&lastmod=2999-01-01T00:00:00%2B00:00"),
            method="POST",
        )
        urllib.request.urlopen(request, timeout=10).close()
        # Read within robots.txt's max age, the sitemaps would come from their copies.
        again = run_command(
            "scrapeflow", "crawl", "--sitemap", index, "--max-depth", "0", "--reread-sitemaps"
        )
        assert again.returncode == 0, again.stdout + again.stderr
        assert graph_paths(site) == {"/graph/1": 1, "/graph/2": 1, "/graph/3": 1}

        refreshed = run_command("scrapeflow", "refresh")
        fetched = graph_paths(site)

        # Everything else is trusted by age (and the sitemap): only /graph/3 is asked again.
        trusting = run_command("scrapeflow", "refresh", "--older-than", "0", "--trust-lastmod")
        after_trusting = graph_paths(site)

    assert refreshed.returncode == 0, refreshed.stdout + refreshed.stderr
    assert "1 changed since (sitemap lastmod)" in refreshed.stdout, refreshed.stdout
    assert fetched == {"/graph/1": 1, "/graph/2": 1, "/graph/3": 2}
    # /graph/1 is dated before its fetch: left alone; /graph/2 has no date: refreshed by age;
    # /graph/3 is still dated after its last fetch (2999): fetched again.
    assert trusting.returncode == 0, trusting.stdout + trusting.stderr
    assert "1 left alone (sitemap lastmod)" in trusting.stdout, trusting.stdout
    assert after_trusting == {"/graph/1": 1, "/graph/2": 2, "/graph/3": 3}
