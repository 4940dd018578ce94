"""`dagster asset materialize` on the shipped location starts its step server (the forkserver
every step is forked from) as the location is built, before the run exists
(`scaleout.local.start_step_server_early`): a run of several shards forks its steps from that
one server; a run whose steps can only follow one another (one shard) runs them in the
command's own process and stops the server (`scaleout.one_process_runs`), unless the run
config asks for the multiprocess executor."""

import json
import multiprocessing
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import dagster as dg
from dagster import RunRecord

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


# Two shards for the twelve tasks below, whatever this machine's cores.
TWO_SHARDS = {"resources": {"shard_settings": {"config": {"shards": 2, "min_tasks_per_shard": 6}}}}
MULTIPROCESS = {"execution": {"config": {"multiprocess": {}}}}


class Watched(NamedTuple):
    """A `dagster asset materialize` watched to its end: its step servers and exit."""

    pid: int
    returncode: int
    stderr: str
    ended: float
    servers: dict[int, tuple[float, str]]  # pid: (first seen, command line)
    gone: dict[int, float]  # server pid: first seen ended while the command ran


def materialize_watched(
    run_command: Run,
    dagster_home: Path,
    layout: DataLayout,
    site_thread: SiteThread,
    tmp_path: Path,
    config: dict | None = None,
) -> Watched:
    """Add twelve tasks, materialise `scrape` over them watching the command's children."""
    rows = [(f"srv-{n:02d}", site_thread.url(f"/page/{n}")) for n in range(12)]
    added = run_command("scrapeflow", "tasks", "add", str(write_csv(tmp_path / "t.csv", rows)))
    assert added.returncode == 0, added.stderr
    command = [str(BIN_DIR / "dagster"), "asset", "materialize", "-m"]
    command += ["scrapeflow_dagster.definitions", "--select", "scrape"]
    command += ["--partition-range", "srv-00...srv-11"]
    if config is not None:
        command += ["--config-json", json.dumps(config)]

    proc = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=process_env(dagster_home, layout.root),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    servers: dict[int, tuple[float, str]] = {}
    gone: dict[int, float] = {}
    try:
        while proc.poll() is None:
            children = _children(proc.pid)
            for pid, cmdline in children.items():
                if FORKSERVER in cmdline and pid not in servers:
                    servers[pid] = (time.time(), cmdline)
            for pid in servers:
                if pid not in gone and (pid not in children or not _alive(pid)):
                    gone[pid] = time.time()
            time.sleep(0.01)
        ended = time.time()
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr[-3000:]
    return Watched(proc.pid, proc.returncode, stderr, ended, servers, gone)


def event_messages(instance: dg.DagsterInstance, run_id: str, event_type: str) -> list[str]:
    """The messages of the run's Dagster events of `event_type`."""
    return [
        record.message
        for record in instance.all_logs(run_id)
        if record.dagster_event and record.dagster_event.event_type_value == event_type
    ]


def step_workers(instance: dg.DagsterInstance, run_id: str) -> int:
    """How many step processes the run started."""
    return len(event_messages(instance, run_id, "STEP_WORKER_STARTED"))


def materialized_run(
    cli_instance: Callable[[], dg.DagsterInstance],
) -> tuple[dg.DagsterInstance, RunRecord]:
    """The instance and its one run, once every task `materialize_watched` added is
    materialised."""
    keys = [f"srv-{n:02d}" for n in range(12)]
    instance = cli_instance()
    assert set(partition_statuses(instance, "scrape", keys).values()) == {Status.MATERIALIZED}
    (run,) = instance.get_run_records()
    return instance, run


def test_a_run_of_several_shards_forks_its_steps_from_the_server_started_before_it(
    run_command: Run,
    cli_instance: Callable[[], dg.DagsterInstance],
    dagster_home: Path,
    layout: DataLayout,
    site_thread: SiteThread,
    tmp_path: Path,
) -> None:
    watched = materialize_watched(
        run_command, dagster_home, layout, site_thread, tmp_path, TWO_SHARDS
    )

    instance, run = materialized_run(cli_instance)
    # One server, the run's: Dagster's executor found it running and forked every step from it
    # (plan, two shards, collect).
    ((pid, (seen, cmdline)),) = watched.servers.items()
    assert seen < run.create_timestamp.timestamp()
    assert f"['{DAGSTER_EXECUTOR_MODULE}', 'dagster'," in cmdline
    assert "'scrapeflow_dagster.definitions']" in cmdline
    assert step_workers(instance, run.dagster_run.run_id) == 4
    # It ended with the command.
    wait_until(
        lambda: not _alive(pid), what="the step server's end", timeout_seconds=10, poll_seconds=0.05
    )


def test_a_one_shard_run_runs_in_the_command_and_stops_the_server(
    run_command: Run,
    cli_instance: Callable[[], dg.DagsterInstance],
    dagster_home: Path,
    layout: DataLayout,
    site_thread: SiteThread,
    tmp_path: Path,
) -> None:
    watched = materialize_watched(run_command, dagster_home, layout, site_thread, tmp_path)

    instance, run = materialized_run(cli_instance)
    run_id = run.dagster_run.run_id
    assert step_workers(instance, run_id) == 0
    in_process = f"Executing steps in process (pid: {watched.pid})"
    assert in_process in event_messages(instance, run_id, "ENGINE_EVENT")
    # The server started early was stopped as the run began, not left importing until the end.
    ((pid, _),) = watched.servers.items()
    assert pid in watched.gone and watched.gone[pid] < watched.ended, watched
    assert run.end_time is not None and watched.gone[pid] < run.end_time


def test_a_run_config_asking_for_the_multiprocess_executor_gets_it(
    run_command: Run,
    cli_instance: Callable[[], dg.DagsterInstance],
    dagster_home: Path,
    layout: DataLayout,
    site_thread: SiteThread,
    tmp_path: Path,
) -> None:
    materialize_watched(run_command, dagster_home, layout, site_thread, tmp_path, MULTIPROCESS)

    instance = cli_instance()
    (run,) = instance.get_run_records()
    # Plan, one shard, collect: each in a process of its own, as asked.
    assert step_workers(instance, run.dagster_run.run_id) == 3


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
