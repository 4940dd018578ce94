"""The `pages` table: one row per parsed page, kept current by the `pages` step and restored by
a rebuild from status files."""

from pathlib import Path

from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.history import rebuild_from_status_dir
from scrapeflow_dagster.engine.run.step import run_step
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.engine.history.helpers import query
from scrapeflow_dagster_tests.support.tasks import add_task_file

COLUMNS = "key, url, final_url, http_status, title, link_count, content_type, charset"


async def scrape_and_parse(layout: DataLayout, site: LocalSite, count: int) -> list[str]:
    rows = [f"p{n},{site.url(f'/page/{n}')}" for n in range(count)]
    rows.append(f"gone,{site.url('/status/404')}")
    keys = add_task_file(layout, rows)
    settings = ScrapeSettings(request_timeout_seconds=5.0)
    await run_step(layout, scrape, keys, settings=settings)
    await run_step(layout, pages, keys, requires=["scrape"])
    return keys


async def test_every_parsed_page_has_one_row_with_its_title(
    site: LocalSite, tmp_path: Path
) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    await scrape_and_parse(layout, site, 5)

    found = query(layout.db_path, f"SELECT {COLUMNS} FROM pages ORDER BY key")

    assert [row[0] for row in found] == [f"p{n}" for n in range(5)]  # not the 404
    for n, (key, url, final_url, status, title, links, content_type, charset) in enumerate(found):
        assert (key, url, final_url, status) == (f"p{n}", site.url(f"/page/{n}"), url, 200)
        assert title == f"Page {n}" and links and links > 0
        assert content_type is not None and content_type.startswith("text/html")
        assert charset == "utf-8"
    fetched = query(layout.db_path, "SELECT count(*) FROM pages WHERE fetched_at <= parsed_at")
    assert fetched == [(5,)]


async def test_parsing_again_keeps_one_row_per_page_and_a_rebuild_restores_them(
    site: LocalSite, tmp_path: Path
) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    keys = await scrape_and_parse(layout, site, 3)
    await run_step(layout, pages, keys, requires=["scrape"], force=True)
    before = query(layout.db_path, f"SELECT {COLUMNS} FROM pages ORDER BY key")
    assert len(before) == 3

    layout.db_path.unlink()
    result = rebuild_from_status_dir(layout.status_dir, layout.db_path)

    assert not result.errors
    assert query(layout.db_path, f"SELECT {COLUMNS} FROM pages ORDER BY key") == before
