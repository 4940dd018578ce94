"""The commands users type, as real processes on a temp `DAGSTER_HOME` and data folder:
`scrapeflow tasks add`, `dagster asset materialize`, `scrapeflow status`, `scrapeflow db summary`.
"""

import subprocess
from collections.abc import Callable
from pathlib import Path

import dagster as dg

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.status import load_status
from scrapeflow_dagster.engine.tasks.keys import request_key
from scrapeflow_dagster.lib.partitions import TASKS_PARTITIONS_NAME
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.cli.helpers import Run, write_csv
from scrapeflow_dagster_tests.support.partitions import Status, partition_statuses


def materialize_cli(run: Run, *selection: str) -> subprocess.CompletedProcess:
    return run(
        "dagster",
        "asset",
        "materialize",
        "-m",
        "scrapeflow_dagster.definitions",
        "--select",
        "scrape",
        *selection,
    )


def test_tasks_add_names_bad_lines_and_still_adds_good_ones(
    run_command: Run,
    cli_instance: Callable[[], dg.DagsterInstance],
    site_thread: SiteThread,
    tmp_path: Path,
    layout: DataLayout,
) -> None:
    urls = [site_thread.url(f"/page/{n}") for n in range(4)]
    path = tmp_path / "tasks.txt"
    path.write_text(
        f"# four pages and a file URL\n{urls[0]}\n{urls[1]}\nfile:///etc/passwd\n"
        f"{urls[2]}\n\n{urls[3]}\n"
    )

    done = run_command("scrapeflow", "tasks", "add", str(path))

    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{path}:4:" in done.stderr and "file:///etc/passwd" in done.stderr
    assert "4 valid tasks" in done.stdout and "4 new partitions" in done.stdout
    keys = [request_key(url) for url in urls]
    assert cli_instance().get_dynamic_partitions(TASKS_PARTITIONS_NAME) == keys
    for key, url in zip(keys, urls, strict=True):
        status = load_status(layout.status_dir, key)
        assert status is not None and status["params"] == {"url": url}

    again = run_command("scrapeflow", "tasks", "add", str(path))

    assert again.returncode == 1
    assert "0 new partitions" in again.stdout
    assert cli_instance().get_dynamic_partitions(TASKS_PARTITIONS_NAME) == keys


def test_dagster_materialize_over_a_range_and_one_partition(
    run_command: Run,
    cli_instance: Callable[[], dg.DagsterInstance],
    site_thread: SiteThread,
    tmp_path: Path,
) -> None:
    rows = [(f"cli-{n:02d}", site_thread.url(f"/page/{n}")) for n in range(20)]
    added = run_command("scrapeflow", "tasks", "add", str(write_csv(tmp_path / "t.csv", rows)))
    assert added.returncode == 0, added.stderr
    keys = [key for key, _ in rows]
    assert cli_instance().get_dynamic_partitions(TASKS_PARTITIONS_NAME) == keys

    ranged = materialize_cli(run_command, "--partition-range", "cli-00...cli-14")

    assert ranged.returncode == 0, ranged.stdout[-3000:] + ranged.stderr[-3000:]
    found = partition_statuses(cli_instance(), "scrape", keys)
    assert found == {k: Status.MATERIALIZED if k <= "cli-14" else None for k in keys}

    single = materialize_cli(run_command, "--partition", "cli-19")

    assert single.returncode == 0, single.stdout[-3000:] + single.stderr[-3000:]
    assert partition_statuses(cli_instance(), "scrape", ["cli-18", "cli-19"]) == {
        "cli-18": None,
        "cli-19": Status.MATERIALIZED,
    }

    status = run_command("scrapeflow", "status")

    assert status.returncode == 0, status.stderr
    assert "scrape" in status.stdout
    (success_line,) = [line for line in status.stdout.splitlines() if line.startswith("SUCCESS")]
    assert success_line.split() == ["SUCCESS", "16"]

    summary = run_command("scrapeflow", "db", "summary")

    assert summary.returncode == 0, summary.stderr
    for title in ("success rate per executor", "failures by error class", "slowest hosts"):
        assert f"-- {title}" in summary.stdout
    (scrape_line,) = [
        line for line in summary.stdout.splitlines() if line.split()[:1] == ["scrape"]
    ]
    assert scrape_line.split() == ["scrape", "16", "16", "100.0"]


def test_dagster_materialize_exits_non_zero_when_a_task_fails(
    run_command: Run,
    cli_instance: Callable[[], dg.DagsterInstance],
    site_thread: SiteThread,
    tmp_path: Path,
) -> None:
    rows = [("ok-1", site_thread.url("/page/1")), ("gone-1", site_thread.url("/status/404"))]
    added = run_command("scrapeflow", "tasks", "add", str(write_csv(tmp_path / "t.csv", rows)))
    assert added.returncode == 0, added.stderr

    done = materialize_cli(run_command, "--partition-range", "ok-1...gone-1")

    assert done.returncode != 0
    assert "1 of 2 tasks failed" in done.stdout + done.stderr
    assert partition_statuses(cli_instance(), "scrape", ["ok-1", "gone-1"]) == {
        "ok-1": Status.MATERIALIZED,
        "gone-1": Status.FAILED,
    }
    summary = run_command("scrapeflow", "db", "summary")
    assert "HttpStatusError" in summary.stdout


def test_home_init_writes_the_embedded_home_and_never_overwrites_another(
    run_command: Run, dagster_home: Path, tmp_path: Path
) -> None:
    config = dagster_home / "dagster.yaml"
    config.write_text("telemetry:\n  enabled: true\n")  # a user's own file

    refused = run_command("scrapeflow", "home", "init")

    assert refused.returncode == 1
    assert str(config) in refused.stderr and "--force" in refused.stderr
    assert config.read_text() == "telemetry:\n  enabled: true\n"

    forced = run_command("scrapeflow", "home", "init", "--force")
    again = run_command("scrapeflow", "home", "init")  # the same file: nothing to refuse

    assert (forced.returncode, again.returncode) == (0, 0), forced.stderr + again.stderr
    assert f"export DAGSTER_HOME={dagster_home}" in again.stdout
    assert "enabled: false" in config.read_text()
    listed = run_command("dagster", "sensor", "list", "-m", "scrapeflow_dagster.definitions")
    assert listed.returncode == 0 and "inbox_sensor" in listed.stdout, listed.stderr
