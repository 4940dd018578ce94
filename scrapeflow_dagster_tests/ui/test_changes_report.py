"""The `changes_report` asset's page in the Dagster UI after a refresh found changes: which
pages changed and how many times, as the real webserver renders them in Chromium."""

import json
import subprocess
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg
import pytest

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.content.changing import version_at
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.support.paths import BIN_DIR
from scrapeflow_dagster_tests.support.processes import process_env
from scrapeflow_dagster_tests.support.tasks import store_and_add
from scrapeflow_dagster_tests.ui.test_partition_pages import screenshot

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

PAGES = 6
LATER = 48 * 3600.0  # site seconds: two days on, some pages changed


def latest_value(page: "Page", key: str) -> "Locator":
    """The value cell of `key` in the asset's Metadata table (key, timestamp, value)."""
    return page.locator(f'xpath=//tr[td[1][normalize-space(.)="{key}"]]/td[last()]')


def materialize(home: Path, layout: DataLayout, cwd: Path, *args: str) -> None:
    done = subprocess.run(
        [str(BIN_DIR / "dagster"), "asset", "materialize", "-m", "scrapeflow_dagster.definitions",
         *args],
        cwd=cwd,
        env=process_env(home, layout.root),
        capture_output=True,
        text=True,
        timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.mark.slow  # about a minute: three CLI runs, `dagster dev` and Chromium
def test_the_changes_report_shows_which_pages_changed_and_how_often(
    homes: tuple[Path, DataLayout], dagster_dev: str, page: "Page", tmp_path: Path
) -> None:
    from playwright.sync_api import expect  # here: without playwright the test skips

    home, layout = homes
    chain = ["--select", "scrape,validation,pages"]
    with SiteThread() as site:
        rows = [(f"cr-{n}", site.url(f"/changing/{n}")) for n in range(PAGES)]
        with dg.DagsterInstance.get() as instance:
            keys = store_and_add(layout, instance, rows)
        span = ["--partition-range", f"{keys[0]}...{keys[-1]}"]
        materialize(home, layout, tmp_path, *chain, *span)
        clock = urllib.request.Request(
            site.url(f"/control/changing/clock?t={LATER}"), method="POST"
        )
        urllib.request.urlopen(clock, timeout=5).close()
        again = {"ops": {"executor_chain": {"config": {"refresh_older_than_seconds": 0}}}}
        materialize(home, layout, tmp_path, *chain, *span, "--config-json", json.dumps(again))
    materialize(home, layout, tmp_path, "--select", "changes_report")
    changed = [url for n, (_, url) in enumerate(rows) if version_at(n, LATER) > 0]
    assert changed and len(changed) < PAGES

    page.goto(f"{dagster_dev}/assets/changes_report")

    try:
        expect(latest_value(page, "changes_total")).to_have_text(str(len(changed)))
        expect(latest_value(page, "pages_changed_in_window")).to_have_text(str(len(changed)))
        expect(latest_value(page, "pages_observed")).to_have_text(str(PAGES))
        latest_value(page, "summary").get_by_text("Show Markdown").click()
        summary = page.get_by_role("dialog")
        for url in changed:  # each changed page, by the URL it was requested at
            expect(summary.get_by_text(url, exact=False).first).to_be_visible()
    finally:
        screenshot(page, tmp_path / "changes-report.png")
