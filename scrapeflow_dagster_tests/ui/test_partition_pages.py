"""The `scrape` asset's partitions in the Dagster UI after a run in which one task failed.

What Dagster 1.13 renders: a materialised partition's page shows its materialisation's
metadata (URL, size). A failed partition's page shows only "Run ... failed, and did not
materialize this asset." and no metadata (its "latest" section lists materialisations only);
its observation, with the URL and error, unfolds in the "View all historical events" dialog,
and the Events tab opened at that partition shows it at once.
"""

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg
import pytest

from scrapeflow_dagster.dagster_cli import materialize_range_command
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.support.processes import process_env
from scrapeflow_dagster_tests.support.tasks import store_and_add

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

PAGE_BYTES = 3210  # odd enough that "3210" in the page can only be the size
FAILED_KEY = "ui-3"
MATERIALISED_KEY = "ui-2"
MATERIALIZE_TIMEOUT_SECONDS = 180


@dataclass(frozen=True)
class RunWithFailures:
    """The run of `scrape` over every task, and the URL of each task."""

    run_id: str
    urls: dict[str, str]


@pytest.fixture
def site_thread() -> Iterator[SiteThread]:
    with SiteThread(pages=20, page_bytes=PAGE_BYTES) as site:
        yield site


@pytest.fixture
def run_with_failures(
    site_thread: SiteThread, homes: tuple[Path, DataLayout], tmp_path: Path
) -> RunWithFailures:
    """Six tasks, one of them a 404, materialised by the real `dagster asset materialize`."""
    home, layout = homes
    rows = [(f"ui-{n}", site_thread.url(f"/page/{n}")) for n in range(6)]
    rows[3] = (FAILED_KEY, site_thread.url("/status/404"))
    with dg.DagsterInstance.get() as instance:
        keys = store_and_add(layout, instance, rows)
    done = subprocess.run(
        materialize_range_command("scrape", keys[0], keys[-1]),
        cwd=tmp_path,
        env=process_env(home, layout.root),
        capture_output=True,
        text=True,
        timeout=MATERIALIZE_TIMEOUT_SECONDS,
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert "1 of 6 tasks failed" in done.stdout + done.stderr
    with dg.DagsterInstance.get() as instance:
        (run,) = instance.get_runs()
    return RunWithFailures(run_id=run.run_id, urls=dict(rows))


def metadata_value(scope: "Locator | Page", label: str) -> "Locator":
    """The value cell of the metadata row labelled `label` (Dagster's tables: label, value)."""
    return scope.locator(f'xpath=.//tr[td[1][normalize-space(.)="{label}"]]/td[2]')


def screenshot(page: "Page", path: Path) -> Path:
    page.screenshot(path=path, full_page=True)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", path
    return path


@pytest.mark.slow  # about 40 s: a CLI run, `dagster dev` and Chromium
def test_partition_pages_show_the_failed_url_and_error_and_the_materialised_url_and_size(
    run_with_failures: RunWithFailures, dagster_dev: str, page: "Page", tmp_path: Path
) -> None:
    from playwright.sync_api import expect  # here: without playwright the test skips

    run_id, urls = run_with_failures.run_id, run_with_failures.urls
    partitions = f"{dagster_dev}/assets/scrape?view=partitions&partition="

    page.goto(partitions + MATERIALISED_KEY)

    expect(metadata_value(page, "url")).to_have_text(urls[MATERIALISED_KEY])
    expect(metadata_value(page, "size")).to_have_text(str(PAGE_BYTES))
    expect(metadata_value(page, "http_status")).to_have_text("200")
    screenshot(page, tmp_path / "materialised-partition.png")

    page.goto(partitions + FAILED_KEY)

    expect(page.get_by_text(f"Run {run_id[:8]} failed, and did not materialize")).to_be_visible()
    screenshot(page, tmp_path / "failed-partition.png")
    page.get_by_role("button", name="View all historical events (1)").click()
    history = page.get_by_role("dialog")
    history.get_by_text(FAILED_KEY, exact=True).click()  # unfolds the observation
    expect(history.get_by_text("HttpStatusError: HTTP response 404")).to_be_visible()
    expect(metadata_value(history, "url")).to_have_text(urls[FAILED_KEY])
    expect(metadata_value(history, "error_class")).to_have_text("HttpStatusError")
    expect(metadata_value(history, "message")).to_have_text("HTTP response 404")
    expect(metadata_value(history, "http_status")).to_have_text("404")
    screenshot(page, tmp_path / "failed-partition-history.png")

    page.goto(f"{dagster_dev}/assets/scrape?view=events&partition={FAILED_KEY}")

    expect(page.get_by_text(f"Partition {FAILED_KEY} observed in run {run_id[:8]}")).to_be_visible()
    expect(metadata_value(page, "url")).to_have_text(urls[FAILED_KEY])
    expect(metadata_value(page, "error_kind")).to_have_text("permanent")
    expect(metadata_value(page, "message")).to_have_text("HTTP response 404")
    screenshot(page, tmp_path / "failed-partition-event.png")
