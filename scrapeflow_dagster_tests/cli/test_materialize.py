"""`scrapeflow materialize ASSET --missing | --failed | --all`: the real `dagster asset
materialize` once per contiguous range of the selected partitions, read from the instance."""

from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest

from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.cli.helpers import Run, add_through_the_cli
from scrapeflow_dagster_tests.support.partitions import Status, partition_statuses

ScrapeStatuses = Callable[[list[str]], dict[str, Status | None]]


@pytest.fixture
def scrape_statuses(cli_instance: Callable[[], dg.DagsterInstance]) -> ScrapeStatuses:
    """`get(keys)`: Dagster's status of each key's `scrape` partition now (None: missing)."""
    return lambda keys: partition_statuses(cli_instance(), "scrape", keys)


def test_missing_then_failed_until_only_the_broken_task_fails(
    run_command: Run, scrape_statuses: ScrapeStatuses, site_thread: SiteThread, tmp_path: Path
) -> None:
    rows = [(f"m-{n}", site_thread.url(f"/page/{n}")) for n in range(6)]
    rows[1] = ("m-1", site_thread.url("/flaky/m-1?fail=1&code=404"))  # fails once, then serves
    rows[4] = ("m-4", site_thread.url("/status/404"))  # fails for good
    keys = add_through_the_cli(run_command, tmp_path, rows)

    missing = run_command("scrapeflow", "materialize", "scrape", "--missing")

    assert missing.returncode == 1, missing.stdout[-3000:] + missing.stderr[-3000:]
    assert "scrape m-0...m-5 (6 tasks): failed (dagster exit 1)" in missing.stdout
    assert "2 of 6 tasks failed" in missing.stdout + missing.stderr  # dagster's own output
    found = scrape_statuses(keys)
    assert {k for k, v in found.items() if v == Status.FAILED} == {"m-1", "m-4"}

    failed = run_command("scrapeflow", "materialize", "scrape", "--failed")

    assert failed.returncode == 1, failed.stdout[-3000:] + failed.stderr[-3000:]
    summary = [line for line in failed.stdout.splitlines() if line.startswith("scrape m-")]
    assert summary == [
        "scrape m-1...m-1 (1 task): succeeded",
        "scrape m-4...m-4 (1 task): failed (dagster exit 1)",
    ]
    found = scrape_statuses(keys)
    assert found == {k: Status.FAILED if k == "m-4" else Status.MATERIALIZED for k in keys}

    nothing = run_command("scrapeflow", "materialize", "scrape", "--missing")

    assert nothing.returncode == 0, nothing.stderr
    assert nothing.stdout.strip() == "nothing to materialize: no missing task partitions of scrape"


def test_dry_run_prints_one_line_per_range_and_runs_nothing(
    run_command: Run, scrape_statuses: ScrapeStatuses, site_thread: SiteThread, tmp_path: Path
) -> None:
    keys = add_through_the_cli(
        run_command, tmp_path, [(f"r-{n}", site_thread.url(f"/page/{n}")) for n in range(3)]
    )
    config = '{"ops": {"executor_chain": {"config": {"force": true}}}}'

    planned = run_command(
        "scrapeflow", "materialize", "scrape", "--all", "--dry-run", "--config-json", config
    )

    assert planned.returncode == 0, planned.stderr
    (line,) = planned.stdout.splitlines()
    assert line.startswith("scrape r-0...r-2 (3 tasks): would run ")
    assert "--partition-range r-0...r-2" in line and "--config-json" in line
    assert scrape_statuses(keys) == dict.fromkeys(keys, None)


def test_a_long_contiguous_range_is_one_run(
    run_command: Run, site_thread: SiteThread, tmp_path: Path
) -> None:
    # The runs of `materialize` and `refresh` go one after another: a range cut at 10,000
    # tasks (as the sensors cut theirs, for the run queue) would cost a run's start and a log
    # shard per 10,000 tasks and buy nothing.
    count = 10_050
    add_through_the_cli(
        run_command, tmp_path, [(f"l-{n:05d}", site_thread.url(f"/page/{n}")) for n in range(count)]
    )

    planned = run_command("scrapeflow", "materialize", "scrape", "--all", "--dry-run")

    assert planned.returncode == 0, planned.stderr
    (line,) = planned.stdout.splitlines()
    assert line.startswith(f"scrape l-00000...l-{count - 1:05d} ({count} tasks): would run ")


def test_bad_usage_exits_2_naming_the_problem(run_command: Run) -> None:
    unknown = run_command("scrapeflow", "materialize", "scrapes", "--missing")
    no_selection = run_command("scrapeflow", "materialize", "scrape")
    bad_config = run_command("scrapeflow", "materialize", "scrape", "--all", "--config-json", "{")

    assert unknown.returncode == 2
    assert "'scrapes' is not an executor asset" in unknown.stderr
    assert "scrape, validation, pages" in unknown.stderr
    assert no_selection.returncode == 2 and "--missing" in no_selection.stderr
    assert bad_config.returncode == 2 and "--config-json is not JSON" in bad_config.stderr
