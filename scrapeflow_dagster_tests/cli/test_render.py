"""Pages built by scripts, as a user renders them: `scrapeflow crawl --render` of the bundled
site's script-built shop with the `render` step in the chain (`SCRAPEFLOW_RENDER=1`), every
page a browser user reaches found and parsed from its rendered DOM; without the step, a task
marked `render` fails naming it."""

import json
import urllib.request
from pathlib import Path

import duckdb
import pytest

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.content.scripted import SCRIPTED_ITEMS, item_name
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.engine.render.conftest import browser_available  # noqa: F401
from scrapeflow_dagster_tests.support.processes import process_env, run_installed

pytestmark = pytest.mark.usefixtures("browser_available")


def _requests(site: SiteThread) -> dict[str, int]:
    with urllib.request.urlopen(site.url("/control/requests"), timeout=5) as answer:
        paths: dict[str, int] = json.loads(answer.read())["paths"]
    return paths


def test_a_rendered_crawl_finds_every_page_the_scripts_link(
    dagster_home: Path, site_thread: SiteThread, tmp_path: Path, layout: DataLayout
) -> None:
    env = {**process_env(dagster_home, layout.root), "SCRAPEFLOW_RENDER": "1"}
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(site_thread.url("/app/") + "\n")

    crawled = run_installed(
        env, tmp_path, "scrapeflow", "crawl", str(seeds), "--max-depth", "2", "--render"
    )

    assert crawled.returncode == 0, crawled.stdout[-2000:] + crawled.stderr[-2000:]
    with duckdb.connect(str(layout.db_path), read_only=True) as conn:
        rows = conn.execute("SELECT url, title, link_count FROM pages ORDER BY url").fetchall()
    items = {site_thread.url(f"/app/item/{i}"): f"Item {i}" for i in range(SCRIPTED_ITEMS)}
    assert {url: title for url, title, _ in rows} == {
        site_thread.url("/app/"): "Scripted shop",
        **items,
    }
    links = {url: count for url, _, count in rows}
    assert links[site_thread.url("/app/")] == SCRIPTED_ITEMS
    assert links[site_thread.url("/app/item/0")] == 2  # back to the shop, on to item 1
    assert links[site_thread.url(f"/app/item/{SCRIPTED_ITEMS - 1}")] == 1
    counts = _requests(site_thread)
    # Each document fetched once (by scrape), each script through the gate, no image at all.
    assert counts["/app/"] == 1
    assert all(counts[f"/app/item/{i}"] == 1 for i in range(SCRIPTED_ITEMS))
    assert counts["/app/item.js"] == SCRIPTED_ITEMS
    assert "/app/logo.png" not in counts
    assert item_name(5) == "Scripted item 5"


def test_without_the_render_step_a_task_marked_render_fails_naming_it(
    dagster_home: Path, site_thread: SiteThread, tmp_path: Path, layout: DataLayout
) -> None:
    env = process_env(dagster_home, layout.root)  # no SCRAPEFLOW_RENDER: the chain is as ever
    tasks = tmp_path / "tasks.csv"
    tasks.write_text(f"key,url,render\nshop,{site_thread.url('/app/')},true\n")
    added = run_installed(env, tmp_path, "scrapeflow", "tasks", "add", str(tasks))
    assert added.returncode == 0, added.stderr
    done = run_installed(
        env, tmp_path, "dagster", "asset", "materialize", "-m", "scrapeflow_dagster.definitions",
        "--select", "scrape,validation,pages", "--partition", "shop",
    )  # fmt: skip
    assert done.returncode != 0
    status = json.loads((layout.status_dir / "shop.status.json").read_text())
    assert status["scrape_status"] == "SUCCESS"
    assert "SCRAPEFLOW_RENDER=1" in status["pages_status"]
