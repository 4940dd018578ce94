"""`scrapeflow crawl --main-content`: one flag keeps each crawled page's main content and its
metadata, as the `page_main_content` setting does for runs, through the real CLI and Dagster."""

from pathlib import Path

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.cli.helpers import Run
from scrapeflow_dagster_tests.support.ledger import query


def test_a_crawl_with_main_content_keeps_each_pages_main_content(
    site_thread: SiteThread, run_command: Run, layout: DataLayout, tmp_path: Path
) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(site_thread.url("/products/list/0") + "\n")
    done = run_command(
        "scrapeflow",
        "crawl",
        str(seeds),
        "--max-depth",
        "1",
        "--max-pages",
        "3",
        "--main-content",
        timeout_seconds=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "crawl finished: 3 tasks run of 3" in done.stdout, done.stdout
    rows = query(
        layout.db_path,
        "SELECT url, text, markdown, title, extracted_by FROM main_content ORDER BY url",
    )
    assert len(rows) == 3, rows
    for url, text, markdown, title, extracted_by in rows:
        assert text and markdown and title, url
        assert extracted_by in ("trafilatura", "page"), (url, extracted_by)
    listing = next(row for row in rows if row[0].endswith("/products/list/0"))
    assert "Blue widget 0" in listing[1] and "[Blue widget 0](http" in listing[2]
    # The page text setting is its own: nothing asked for it.
    assert query(layout.db_path, "SELECT count(*) FROM page_text") == [(0,)]
