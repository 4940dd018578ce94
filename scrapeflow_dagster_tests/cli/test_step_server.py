"""`dagster asset materialize` on the shipped location starts its step server (the forkserver
every step is forked from) as the location is built, before the run exists
(`scaleout.local.start_step_server_early`), and the run's steps use that one server."""

import json
import multiprocessing
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import dagster as dg

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.scaleout.local import (
    DAGSTER_EXECUTOR_MODULE,
    start_step_server_early,
)
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.cli.helpers import Run, write_csv
from scrapeflow_dagster_tests.support.partitions import Status, partition_statuses
from scrapeflow_dagster_tests.support.paths import BIN_DIR
from scrapeflow_dagster_tests.support.processes import process_env, wait_until

FORKSERVER = "multiprocessing.forkserver"


def _children(pid: int) -> dict[int, str]:
    """The command lines of `pid`'s live child processes."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue  # ended meanwhile
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found[int(entry)] = cmdline.replace(b"\0", b" ").decode(errors="replace")
    return found


def _alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, waiting for whoever reaps it, has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_the_step_server_starts_before_the_run_and_its_steps_fork_from_it(
    run_command: Run,
    cli_instance: Callable[[], dg.DagsterInstance],
    dagster_home: Path,
    layout: DataLayout,
    site_thread: SiteThread,
    tmp_path: Path,
) -> None:
    rows = [(f"srv-{n:02d}", site_thread.url(f"/page/{n}")) for n in range(12)]
    added = run_command("scrapeflow", "tasks", "add", str(write_csv(tmp_path / "t.csv", rows)))
    assert added.returncode == 0, added.stderr
    command = [str(BIN_DIR / "dagster"), "asset", "materialize", "-m"]
    command += ["scrapeflow_dagster.definitions", "--select", "scrape"]
    command += ["--partition-range", "srv-00...srv-11"]

    proc = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=process_env(dagster_home, layout.root),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    servers: dict[int, tuple[float, str]] = {}  # pid: (first seen, command line)
    try:
        while proc.poll() is None:
            for pid, cmdline in _children(proc.pid).items():
                if FORKSERVER in cmdline and pid not in servers:
                    servers[pid] = (time.time(), cmdline)
            time.sleep(0.01)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()

    assert proc.returncode == 0, stderr[-3000:]
    keys = [key for key, _ in rows]
    assert set(partition_statuses(cli_instance(), "scrape", keys).values()) == {Status.MATERIALIZED}
    # One server, the run's: Dagster's executor found it running and forked every step from it.
    ((pid, (seen, cmdline)),) = servers.items()
    (run,) = cli_instance().get_run_records()
    assert seen < run.create_timestamp.timestamp()
    assert f"['{DAGSTER_EXECUTOR_MODULE}', 'dagster'," in cmdline
    assert "'scrapeflow_dagster.definitions']" in cmdline
    # It ended with the command.
    wait_until(
        lambda: not _alive(pid), what="the step server's end", timeout_seconds=10, poll_seconds=0.05
    )


def test_only_the_step_launching_dagster_commands_start_it_early() -> None:
    assert not start_step_server_early(argv=["/venv/bin/dagster", "dev"])
    assert not start_step_server_early(argv=["/venv/bin/dagster", "api", "grpc"])
    assert not start_step_server_early(argv=["/venv/bin/scrapeflow", "crawl", "seeds.txt"])
    assert not start_step_server_early(argv=["/venv/bin/pytest", "asset", "materialize"])
    # A run asked to go in the command's own process forks no step.
    config = json.dumps({"execution": {"config": {"in_process": {}}}})
    module_run = ["/venv/lib/dagster/__main__.py", "asset", "materialize", "-m", "defs"]
    assert not start_step_server_early(argv=[*module_run, "--config-json", config])
    assert not start_step_server_early(argv=[*module_run, f"--config-json={config}"])
    # Nor one that starts steps another way, or whose config file is not read here.
    spawn = json.dumps({"execution": {"config": {"multiprocess": {"start_method": {"spawn": {}}}}}})
    assert not start_step_server_early(argv=[*module_run, "--config-json", spawn])
    assert not start_step_server_early(argv=[*module_run, "-c", "run.yaml"])


def _start_in_a_step_process(result: "multiprocessing.Queue[bool]") -> None:
    result.put(start_step_server_early(argv=["/venv/bin/dagster", "asset", "materialize"]))


def test_a_step_process_building_the_location_again_starts_no_server() -> None:
    # Step processes get the command's command line from `multiprocessing`.
    context = multiprocessing.get_context("spawn")
    result: multiprocessing.Queue[bool] = context.Queue()
    child = context.Process(target=_start_in_a_step_process, args=(result,))
    child.start()
    started = result.get(timeout=120)
    child.join(timeout=60)
    assert started is False
