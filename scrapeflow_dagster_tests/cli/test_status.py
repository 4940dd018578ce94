"""`scrapeflow status` as a real process: the table every status file gives, from DuckDB after a
run, and after a run killed with rows unspooled (which it records again into DuckDB)."""

import os
import signal

import pandas as pd

from scrapeflow_dagster.cli.task_views import status_table
from scrapeflow_dagster.engine.history import StatusCounts
from scrapeflow_dagster.engine.history.markers.open_markers import read_markers
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.cli.helpers import Run, run_in_process
from scrapeflow_dagster_tests.engine.history.status_helpers import (
    Step,
    duckdb_alone,
    reference,
    start_child,
)


def table(text: str) -> dict[str, dict[str, int]]:
    """A printed status table as executor -> label -> tasks (zeros left out)."""
    header, _, *rows = text.strip().splitlines()
    executors = header.split()
    found: dict[str, dict[str, int]] = {}
    for row in rows:
        label, *counts = row.rsplit(None, len(executors))
        for executor, count in zip(executors, counts, strict=True):
            if int(count):
                found.setdefault(executor, {})[label] = int(count)
    return found


def test_status_prints_what_the_files_say_after_a_run_and_after_a_kill(
    run_command: Run, site_thread: SiteThread, layout: DataLayout
) -> None:
    rows = [(f"s-{n:02d}", site_thread.url(f"/page/{n}")) for n in range(8)]
    rows += [(f"s-{n:02d}", site_thread.url("/status/404")) for n in range(8, 10)]
    run_in_process(layout, rows, ["scrape", "validation"])

    after_run = run_command("scrapeflow", "status")
    from_files = run_command("scrapeflow", "status", "--from-files")

    assert after_run.returncode == 0, after_run.stderr
    assert after_run.stdout == from_files.stdout
    assert table(after_run.stdout) == reference(layout)
    lines = after_run.stdout.splitlines()
    assert lines[0].split() == ["scrape", "validation"] and lines[1].split() == ["status"]
    assert lines[2].split() == ["SUCCESS", "8", "8"]
    assert lines[3].startswith("ERROR HttpStatusError::") and lines[3].split()[-2:] == ["2", "0"]

    steps = [Step(f"s-{n:02d}", "validation", "ValueError", "not a page") for n in range(5)]
    child = start_child(layout, steps, batch_rows=100)  # all five buffered
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)

    after_kill = run_command("scrapeflow", "status")

    assert after_kill.returncode == 0, after_kill.stderr
    failed = {"SUCCESS": 3, "ERROR ValueError::not a page": 5}
    assert table(after_kill.stdout)["validation"] == failed
    assert table(after_kill.stdout) == reference(layout)
    assert "1 ledger of killed runs" in after_kill.stderr
    assert "5 step runs recorded again into DuckDB" in after_kill.stderr
    assert read_markers(layout.spool_dir) == [] and duckdb_alone(layout) == reference(layout)


def test_the_table_is_laid_out_as_the_pandas_frame_it_was_printed_from() -> None:
    cases = [
        {"scrape": {"SUCCESS": 80000, "ERROR HttpStatusError::HTTP response 404 for ...": 9000}},
        {"a_very_long_executor_name": {"SUCCESS": 1}, "x": {"ERROR e\u0301\u0301 T": 10**12}},
        {"x": {"S": 1}},
    ]
    for counts in cases:
        found = StatusCounts(counts, stored_tasks=0, source="test")
        labels = found.labels
        data = {ex: [by.get(label, 0) for label in labels] for ex, by in counts.items()}
        frame = pd.DataFrame(data, index=pd.Index(labels, name="status"), dtype="int64")
        assert status_table(found) == frame.to_string(), counts
