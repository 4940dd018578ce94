"""A crawl misses no link and changes no URL: through the real `scrapeflow crawl` against the
bundled site's `/spelled/` pages, every link is requested exactly as a browser resolves it
(`<base href>`, escapes, bare query keys, query order and repeats, `@` in paths, `<area>`), a
page with 1,200 links has every one followed, a download is fetched but not parsed as a page,
and DuckDB stores each URL as linked, its canonical form beside it. The crawl is one Dagster run
whose partitions, the discovered ones included, end in exact states."""

import json
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.tasks.keys import canonical_url, request_key
from scrapeflow_dagster.lib.partitions import tasks_partitions_def
from scrapeflow_dagster.site.crawling.spelled import (
    AREA_LINK,
    BROKEN_LINK,
    DOWNLOAD_LINK,
    MANY_LINKS,
    SPELLED_LINKS,
)
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.cli.helpers import Run

MATERIALIZED = dg.AssetPartitionStatus.MATERIALIZED


@pytest.fixture
def site() -> Iterator[SiteThread]:
    with SiteThread(pages=10) as running:
        yield running


def targets(site: SiteThread) -> Counter[str]:
    with urllib.request.urlopen(site.url("/control/spelled"), timeout=10) as response:
        return Counter(json.load(response)["targets"])


@pytest.mark.slow  # about 20-30 s: one run, 1,209 pages
def test_a_crawl_requests_and_stores_every_link_as_the_page_spells_it(
    site: SiteThread,
    run_command: Run,
    layout: DataLayout,
    cli_instance: Callable[[], dg.DagsterInstance],
    tmp_path: Path,
) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(site.url("/spelled/") + "\n")

    done = run_command("scrapeflow", "crawl", str(seeds), "--max-depth", "2", timeout_seconds=600)

    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith("round 0: 1 task: 1 page parsed; links: "), done.stdout
    # Round 1: the linked pages, the download (fetched, a file), the broken link named.
    assert lines[2].startswith(f"round 1: {len(SPELLED_LINKS) + 3} tasks: "), done.stdout
    assert ", 1 failed;" in lines[2], done.stdout
    assert lines[3] == (
        f"  failed: {site.url(BROKEN_LINK)}: scrape ERROR HttpStatusError::HTTP response 404"
    )
    total = 1 + len(SPELLED_LINKS) + 3 + MANY_LINKS
    assert lines[-1].startswith(f"crawl finished: {total} tasks run of {total} "), done.stdout
    expected = ["/spelled/", *(target for _, target in SPELLED_LINKS), AREA_LINK[1]]
    expected.append(DOWNLOAD_LINK[1])
    expected += [f"/spelled/many/{n}" for n in range(MANY_LINKS)]
    # Each page asked for once, at exactly the target a browser sends for its link.
    assert targets(site) == Counter(expected)
    urls = {site.url(target) for target in [*expected, BROKEN_LINK]}
    db = duckdb.connect(str(layout.db_path), read_only=True)
    try:
        stored = {row[0] for row in db.sql("SELECT url FROM tasks").fetchall()}
        linked = {row[0] for row in db.sql("SELECT url FROM frontier").fetchall()}
        pairs = db.sql(
            "SELECT url, canonical_url FROM tasks UNION SELECT url, canonical_url FROM frontier"
        ).fetchall()
        parsed = db.execute("SELECT count(*) FROM pages").fetchall()
        download = db.execute(
            "SELECT r.status, r.size FROM step_runs r JOIN tasks t USING (key) "
            "WHERE t.url = ? AND r.executor = 'pages'",
            [site.url(DOWNLOAD_LINK[1])],
        ).fetchall()
    finally:
        db.close()
    assert stored == urls  # no URL rewritten into its canonical form
    assert linked == urls - {site.url("/spelled/")}
    # Beside each URL as requested, the canonical form de-duplication compares.
    assert dict(pairs) == {url: canonical_url(url) for url in urls}
    assert any(url != canonical for url, canonical in pairs)  # the two really differ
    # The download is a fetched file: no `pages` row, its links (none followed) not read.
    assert parsed == [(len(expected) - 1,)]
    assert download == [("SUCCESS", 66)]

    # One run took the whole crawl: every depth's pages joined it as they were found, each a
    # partition in its exact state (the broken link failed at `scrape` alone).
    instance = cli_instance()
    assert len(instance.get_runs()) == 1
    keys = [request_key(url) for url in sorted(urls)]
    broken = request_key(site.url(BROKEN_LINK))
    for asset, broken_state in [
        ("scrape", dg.AssetPartitionStatus.FAILED),
        ("validation", None),
        ("pages", None),
    ]:
        states = instance.get_status_by_partition(dg.AssetKey(asset), keys, tasks_partitions_def)
        assert {k: (states or {}).get(k) for k in keys} == {
            k: broken_state if k == broken else MATERIALIZED for k in keys
        }, asset

    again = run_command("scrapeflow", "crawl", str(seeds), "--max-depth", "2")

    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.splitlines()[-1] == (
        "crawl finished: nothing to do, every task of the crawl was parsed already"
    )
    assert targets(site) == Counter(expected)  # nothing fetched again
