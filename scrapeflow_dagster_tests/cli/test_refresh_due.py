"""`scrapeflow refresh --due` through the real `dagster asset materialize`, over the site's
`/changing/` pages (known change times): nothing is fetched before its learned interval has
passed, the budgets cap a refresh (the rest wait for the next), each change the site made is one
`changes` row, and each page's interval learns from what its fetch found."""

import json
import time
import urllib.request
from datetime import timedelta
from pathlib import Path

import duckdb

from scrapeflow_dagster.engine.crawl.frontier.lastmods import sitemap_hints
from scrapeflow_dagster.engine.revisit.plan import due_tasks
from scrapeflow_dagster.engine.state.files import iter_statuses
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.schema import last_run, parse_stamp, stamp
from scrapeflow_dagster.site.content.changing import changefreq, rate_per_hour, version_at
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.cli.helpers import Run

PAGES = 8
# Seconds: each page's first revisit interval (a task file column). Long enough for the two
# early refresh commands to start and plan before any page is due on a slow machine (4 s was
# not, on 2026-11-29's); the test then waits only what is left of it.
INITIAL = 20.0


def set_clock(site: SiteThread, seconds: float) -> None:
    request = urllib.request.Request(
        site.url(f"/control/changing/clock?t={seconds}"), method="POST"
    )
    with urllib.request.urlopen(request, timeout=5) as answer:
        assert answer.status == 200


def fetched_at(layout: DataLayout) -> dict[str, str]:
    return {
        path.name.removesuffix(".status.json"): json.loads(path.read_text())["scrape_last_run"]
        for path in sorted(layout.status_dir.glob("*.status.json"))
    }


def revisit(layout: DataLayout, key: str) -> dict:
    status = json.loads((layout.status_dir / f"{key}.status.json").read_text())
    return status["pages"]["revisit"]


def test_refresh_due_fetches_what_is_due_within_budgets_and_records_each_change(
    run_command: Run, site_thread: SiteThread, tmp_path: Path, layout: DataLayout
) -> None:
    tasks = tmp_path / "tasks.csv"
    tasks.write_text(
        "key,url,revisit_min_seconds,revisit_initial_seconds\n"
        + "".join(f"c{n},{site_thread.url(f'/changing/{n}')},1,{INITIAL}\n" for n in range(PAGES))
    )
    assert run_command("scrapeflow", "tasks", "add", str(tasks)).returncode == 0
    first = run_command(
        "dagster", "asset", "materialize", "-m", "scrapeflow_dagster.definitions",
        "--select", "scrape,validation,pages", "--partition-range", f"c0...c{PAGES - 1}",
    )  # fmt: skip
    assert first.returncode == 0, first.stderr[-3000:]
    before = fetched_at(layout)

    # Fetched moments ago, due in INITIAL seconds: nothing to do yet.
    early = run_command("scrapeflow", "refresh", "--due")
    assert early.returncode == 0, early.stderr
    assert "nothing to refresh: no task is due" in early.stdout
    # A host budget alone caps what is due; it is no quota to fill.
    capped_early = run_command("scrapeflow", "refresh", "--due", "--host-budget", "3")
    assert "nothing to refresh: no task is due" in capped_early.stdout, capped_early.stdout
    assert fetched_at(layout) == before

    later = 48 * 3600.0  # two site days: some pages changed, some never do
    set_clock(site_thread, later)
    fetches = [parse_stamp(moment) for moment in before.values()]
    now = parse_stamp(stamp())
    assert now is not None and all(fetches)
    due_at = max(f for f in fetches if f is not None) + timedelta(seconds=INITIAL + 0.5)
    time.sleep(max(0.0, (due_at - now).total_seconds()))
    capped = run_command("scrapeflow", "refresh", "--due", "--budget", "5", "--host-budget", "3")
    assert capped.returncode == 0, capped.stdout + capped.stderr
    assert f"refresh: 3 tasks due or worth the budget, {PAGES - 3} left for later (budget)" in (
        capped.stdout
    )
    after_capped = fetched_at(layout)
    refreshed = sorted(key for key in before if after_capped[key] > before[key])
    assert len(refreshed) == 3  # one host: its budget is the cap

    rest = run_command("scrapeflow", "refresh", "--due")
    assert rest.returncode == 0, rest.stdout + rest.stderr
    assert f"refresh: {PAGES - 3} tasks due" in rest.stdout
    after = fetched_at(layout)
    assert all(after[key] > before[key] for key in before)
    assert all(after[key] == after_capped[key] for key in refreshed)  # not fetched twice

    changed = sorted(f"c{n}" for n in range(PAGES) if version_at(n, later) > 0)
    assert changed and len(changed) < PAGES
    with duckdb.connect(str(layout.db_path), read_only=True) as conn:
        rows = conn.execute("SELECT key, url FROM changes ORDER BY key").fetchall()
        learned = dict(
            conn.execute("SELECT key, interval_seconds FROM revisits ORDER BY key").fetchall()
        )
    assert [key for key, _ in rows] == changed
    assert all(url == site_thread.url(f"/changing/{key[1:]}") for key, url in rows)
    exported = run_command("scrapeflow", "export", "changes", "-o", str(tmp_path / "c.parquet"))
    assert exported.returncode == 0, exported.stderr
    with duckdb.connect() as conn:
        keys = conn.execute(f"SELECT key FROM '{tmp_path / 'c.parquet'}' ORDER BY key").fetchall()
    assert [key for (key,) in keys] == changed
    for key in before:
        grown = INITIAL * (0.8 if key in changed else 1.4)
        assert abs(revisit(layout, key)["interval_seconds"] - grown) < 1e-3
        assert abs(learned[key] - grown) < 1e-3


def test_refresh_budgets_are_checked(run_command: Run, layout: DataLayout) -> None:
    bad = run_command("scrapeflow", "refresh", "--due", "--budget", "-1")
    assert bad.returncode == 2 and "--budget" in bad.stderr and "'-1'" in bad.stderr


def test_a_sitemap_s_changefreq_sets_a_page_s_first_interval(
    run_command: Run, layout: DataLayout
) -> None:
    with SiteThread(changing_pages=20) as site:
        sitemap = site.url("/changing/sitemap.xml")
        crawled = run_command("scrapeflow", "crawl", "--sitemap", sitemap, "--max-depth", "0")
        assert crawled.returncode == 0, crawled.stdout + crawled.stderr
        urls = {site.url(f"/changing/{n}"): n for n in range(20)}
    statuses = list(iter_statuses(layout.status_dir))
    url_of = {key: status["params"]["url"] for key, status in statuses}
    assert set(url_of.values()) == set(urls)
    dated, frequencies = sitemap_hints(layout)
    assert {url_of[key]: f for key, f in frequencies.items()} == {
        url: changefreq(rate_per_hour(n)) for url, n in urls.items()
    }
    fetched = max(last_run(status, "scrape") for _, status in statuses)  # type: ignore[type-var]
    # Two hours on: the pages the sitemap calls hourly are due, the daily ones not yet, the
    # rest by the first interval (7 days).
    for hours, due_rates in ((2, {1.0}), (30, {1.0, 1 / 24})):
        due = due_tasks(
            statuses,
            "scrape",
            fetched + timedelta(hours=hours),
            unlearned_seconds=7 * 86400.0,
            lastmods=dated,
            changefreqs=frequencies,
        )
        assert {url_of[t.key] for t in due} == {
            url for url, n in urls.items() if rate_per_hour(n) in due_rates
        }
