"""The `pages` asset's page in the Dagster UI after a chain run: the row count and the columns
of its results table (`dagster/row_count`, `dagster/column_schema` on the run's last
materialisation), as the real webserver renders them in Chromium."""

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg
import pytest

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.support.paths import BIN_DIR
from scrapeflow_dagster_tests.support.processes import process_env
from scrapeflow_dagster_tests.support.tasks import store_and_add
from scrapeflow_dagster_tests.ui.test_partition_pages import screenshot

if TYPE_CHECKING:
    from playwright.sync_api import Page

TASKS = 7


@pytest.mark.slow  # about 40 s: a CLI run, `dagster dev` and Chromium
def test_the_pages_asset_shows_its_row_count_and_columns(
    homes: tuple[Path, DataLayout], dagster_dev: str, page: "Page", tmp_path: Path
) -> None:
    from playwright.sync_api import expect  # here: without playwright the test skips

    home, layout = homes
    with SiteThread(pages=20, page_bytes=2000) as site:
        rows = [(f"tm-{n}", site.url(f"/page/{n}")) for n in range(TASKS)]
        with dg.DagsterInstance.get() as instance:
            keys = store_and_add(layout, instance, rows)
        done = subprocess.run(
            [
                str(BIN_DIR / "dagster"),
                "asset",
                "materialize",
                "-m",
                "scrapeflow_dagster.definitions",
                "--select",
                "scrape,validation,pages",
                "--partition-range",
                f"{keys[0]}...{keys[-1]}",
            ],  # fmt: skip
            cwd=tmp_path,
            env=process_env(home, layout.root),
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    page.goto(f"{dagster_dev}/assets/pages")

    try:
        row_count = page.locator('xpath=//*[normalize-space(text())="Row count"]/..')
        expect(row_count).to_have_text(f"Row count{TASKS}")
        # The columns table: each output field with the type DuckDB gives it.
        for column, kind in (
            ("key", "VARCHAR"),
            ("ended_at", "TIMESTAMP"),
            ("title", "VARCHAR"),
            ("link_count", "UBIGINT"),
            ("links", "VARCHAR[]"),
            ("output.url", "VARCHAR"),  # the output's own `url`, beside the row's
        ):
            cells = page.locator(f'xpath=//tr[td[1][normalize-space(.)="{column}"]]/td[2]')
            expect(cells).to_have_text(kind)
    finally:
        screenshot(page, tmp_path / "pages-asset.png")
