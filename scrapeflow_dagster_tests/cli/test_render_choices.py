"""What `render: auto` learned is kept for the next run, as a user runs it: `scrapeflow crawl
--render auto` of the bundled site's script-built items (a shell pattern) and its plain pages
(a static one), then `scrapeflow refresh` of the same pages. The refresh renders the items from
their first page, and the plain pages only at their re-check; DuckDB's `render_choices` holds
each pattern's judgement and evidence, and `db rebuild` restores it."""

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from scrapeflow_dagster.engine.render.choice import RECHECK_EVERY, SAMPLE_PAGES
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.content.scripted import SCRIPTED_ITEMS
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.engine.render.conftest import browser_available  # noqa: F401
from scrapeflow_dagster_tests.support.processes import process_env, run_installed

pytestmark = pytest.mark.usefixtures("browser_available")

# More plain pages than RECHECK_EVERY: each run of them reaches a re-check.
PLAIN_PAGES = RECHECK_EVERY + 5


def _renders(layout: DataLayout) -> dict[str, list[dict[str, Any]]]:
    """The `render` outputs of the status files, by kind of page (`item`, `page`)."""
    found: dict[str, list[dict[str, Any]]] = {"item": [], "page": []}
    for path in layout.status_dir.glob("*.status.json"):
        status = json.loads(path.read_text())
        kind = "item" if "/app/item/" in status["params"]["url"] else "page"
        found[kind].append(status["render"])
    return found


def _choices(layout: DataLayout) -> dict[str, tuple[Any, ...]]:
    with duckdb.connect(str(layout.db_path), read_only=True) as conn:
        rows = conn.execute(
            "SELECT pattern, judgement, pages_sampled, pages_browser_needed, pages_seen, "
            "checked_by IS NOT NULL, checked_at IS NOT NULL FROM render_choices"
        ).fetchall()
    return {row[0].split("/", 1)[1]: row[1:] for row in rows}


def test_a_refresh_renders_from_its_first_page_only_the_patterns_that_need_it(
    dagster_home: Path, site_thread: SiteThread, tmp_path: Path, layout: DataLayout
) -> None:
    env = {**process_env(dagster_home, layout.root), "SCRAPEFLOW_RENDER": "1"}
    seeds = tmp_path / "seeds.txt"
    urls = [site_thread.url(f"/app/item/{i}") for i in range(SCRIPTED_ITEMS)]
    urls += [site_thread.url(f"/page/{n}") for n in range(PLAIN_PAGES)]
    seeds.write_text("\n".join(urls) + "\n")

    crawl = ["crawl", str(seeds), "--max-depth", "0", "--render", "auto"]
    crawled = run_installed(env, tmp_path, "scrapeflow", *crawl, timeout=600)
    assert crawled.returncode == 0, crawled.stdout[-2000:] + crawled.stderr[-2000:]
    first = _renders(layout)
    assert len(first["item"]) == SCRIPTED_ITEMS and len(first["page"]) == PLAIN_PAGES
    # The first run samples each pattern: three items compared, then every item rendered;
    # three plain pages compared and found static, then one at its re-check.
    assert sum("a sample" in r["choice"] for r in first["item"]) == SAMPLE_PAGES
    assert all(r["rendered"] for r in first["item"])
    assert sum(r["rendered"] for r in first["page"]) == SAMPLE_PAGES + 1
    assert _choices(layout) == {
        "app/item/*": ("browser", SAMPLE_PAGES, SAMPLE_PAGES, SCRIPTED_ITEMS, True, True),
        "page/*": ("static", SAMPLE_PAGES + 1, 0, PLAIN_PAGES, True, True),
    }

    refreshed = run_installed(
        env, tmp_path, "scrapeflow", "refresh", "--older-than", "0", timeout=600
    )
    assert refreshed.returncode == 0, refreshed.stdout[-2000:] + refreshed.stderr[-2000:]
    second = _renders(layout)
    # Every item from the first: none waits for a sample; no plain page is sampled again,
    # one is rendered, at the pattern's next re-check (pages seen across both runs).
    assert [r["choice"] for r in second["item"]] == ["its pattern's pages need a browser"] * (
        SCRIPTED_ITEMS
    )
    assert all(r["rendered"] and "browser_needed" not in r for r in second["item"])
    rechecks = [r for r in second["page"] if r["rendered"]]
    assert len(rechecks) == (2 * PLAIN_PAGES) // RECHECK_EVERY - PLAIN_PAGES // RECHECK_EVERY
    assert all(r["choice"] == "a static pattern's re-check" for r in rechecks)
    assert not any("a sample" in r["choice"] for r in second["page"])
    after = _choices(layout)
    assert after["page/*"][:4] == ("static", SAMPLE_PAGES + 2, 0, 2 * PLAIN_PAGES)
    assert after["app/item/*"][:4] == ("browser", SAMPLE_PAGES, SAMPLE_PAGES, 2 * SCRIPTED_ITEMS)
    with duckdb.connect(str(layout.db_path), read_only=True) as conn:  # docs/duckdb.md's query
        per_pattern = conn.execute(
            "SELECT c.pattern, c.judgement, count(*) FILTER (o.output->>'rendered' = 'true'), "
            "count(*) FROM outputs o JOIN render_choices c "
            "ON c.pattern = o.output->'pattern'->>'url_pattern' "
            "WHERE o.executor = 'render' GROUP BY ALL ORDER BY ALL"
        ).fetchall()
    assert [row[1:] for row in per_pattern] == [
        ("browser", SCRIPTED_ITEMS, SCRIPTED_ITEMS),
        ("static", len(rechecks), PLAIN_PAGES),
    ]

    # DuckDB started over: `db rebuild` restores the table from the status files.
    layout.db_path.unlink()
    rebuilt = run_installed(env, tmp_path, "scrapeflow", "db", "rebuild")
    assert rebuilt.returncode == 0, rebuilt.stdout[-2000:] + rebuilt.stderr[-2000:]
    assert {name: row[:4] for name, row in _choices(layout).items()} == {
        name: row[:4] for name, row in after.items()
    }
    exported = tmp_path / "choices.jsonl"
    export = ["export", "render_choices", "--format", "jsonl", "--output", str(exported)]
    done = run_installed(env, tmp_path, "scrapeflow", *export)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = [json.loads(line) for line in exported.read_text().splitlines()]
    assert {r["pattern"].split("/", 1)[1]: r["judgement"] for r in rows} == {
        name: row[0] for name, row in after.items()
    }
