"""`scrapeflow crawl` reaches every setting a crawl needs: page text (and any other run config)
from its own options, and a code location of the user's own, found in the current folder as
`dagster -m` finds it."""

from pathlib import Path

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.cli.helpers import Run
from scrapeflow_dagster_tests.support.ledger import query

# A location of the user's own (the shipped assets, under another module name), in the folder
# the command runs in: no PYTHONPATH.
LOCATION = """
from scrapeflow_dagster.defs.assets import executor_assets
from scrapeflow_dagster.defs.factory import scrapeflow_definitions

defs = scrapeflow_definitions([*executor_assets])
"""


def _seeds(site: SiteThread, tmp_path: Path) -> str:
    path = tmp_path / "seeds.txt"
    path.write_text(site.url("/graph/0") + "\n")
    return str(path)


def test_a_crawl_of_a_location_of_ones_own_keeps_page_text_by_its_options(
    site_thread: SiteThread, run_command: Run, layout: DataLayout, tmp_path: Path
) -> None:
    (tmp_path / "my_location.py").write_text(LOCATION)
    done = run_command(
        "scrapeflow",
        "crawl",
        _seeds(site_thread, tmp_path),
        "--max-depth",
        "1",
        "--page-text",
        "500",
        "-m",
        "my_location",
        timeout_seconds=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "crawl finished: 4 tasks run of 4" in done.stdout, done.stdout
    texts = query(layout.db_path, "SELECT url, length(text) FROM page_text ORDER BY url")
    assert len(texts) == 4 and all(0 < length <= 500 for _, length in texts), texts


def test_crawl_options_that_cannot_be_run_config_are_refused_by_name(
    site_thread: SiteThread, run_command: Run, tmp_path: Path
) -> None:
    seeds = _seeds(site_thread, tmp_path)
    for extra, named in (
        (["--config-json", "[1]"], "--config-json must be a JSON object"),
        (["--config-json", "{"], "--config-json is not JSON"),
        (["--markdown"], "--markdown needs --page-text"),
        (["--page-text", "-1"], "--page-text must be 0 or more"),
    ):
        done = run_command("scrapeflow", "crawl", seeds, "--max-depth", "1", *extra)
        assert done.returncode == 2 and named in done.stderr, (extra, done.stderr)
