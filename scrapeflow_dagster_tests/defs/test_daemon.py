"""The sensors in the real daemon: `dagster sensor start` and `dagster-daemon run -w
workspace.yaml` on a temp home, task files moved into the inbox, nothing done by hand."""

import shutil
import subprocess
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import dagster as dg
import pytest

from scrapeflow_dagster.dagster_cli import materialize_range_command
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.status import load_status
from scrapeflow_dagster.engine.tasks.inbox import accepted_dir, done_dir
from scrapeflow_dagster.lib.partitions import (
    RANGE_END_TAG,
    RANGE_START_TAG,
    TASKS_PARTITIONS_NAME,
    add_task_partitions,
)
from scrapeflow_dagster.site.content.changing import version_at
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.support.partitions import Status, partition_statuses
from scrapeflow_dagster_tests.support.paths import BIN_DIR, COMMAND_CWD, REPO_ROOT
from scrapeflow_dagster_tests.support.processes import (
    kill_group,
    process_env,
    stop_group,
    wait_until,
)
from scrapeflow_dagster_tests.support.tasks import store_tasks

ASSETS = ("scrape", "validation", "pages")
WORKSPACE = str(REPO_ROOT / "workspace.yaml")
SETTLE_TIMEOUT_SECONDS = 480.0
# Short ticks and backoff keep the test to a few minutes; the behaviour is the default's.
DAEMON_SETTINGS = {
    "SCRAPEFLOW_SENSOR_INTERVAL_SECONDS": "5",
    "SCRAPEFLOW_RETRY_BACKOFF_SECONDS": "15",
}


class Daemon:
    """`dagster-daemon run` as users start it, in its own process group (with its code server
    and run workers), logging to a file."""

    def __init__(self, dagster_home: Path, layout: DataLayout, log_path: Path) -> None:
        self.env = process_env(dagster_home, layout.root) | DAEMON_SETTINGS
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    def cli(self, *args: str) -> str:
        """Run `dagster ARGS -w workspace.yaml` with the daemon's environment."""
        done = subprocess.run(
            [str(BIN_DIR / "dagster"), *args, "-w", WORKSPACE],
            cwd=COMMAND_CWD,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, f"dagster {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [str(BIN_DIR / "dagster-daemon"), "run", "-w", WORKSPACE],
                cwd=COMMAND_CWD,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def kill(self) -> None:
        """SIGKILL the daemon and everything it started, at once."""
        assert self.process is not None
        kill_group(self.process)

    def stop(self) -> None:
        if self.process is not None:
            stop_group(self.process)

    def wait_until(self, done: Callable[[], bool], what: str, *, poll_seconds: float = 2.0) -> None:
        """Wait for `done` while the daemon runs (started), at most SETTLE_TIMEOUT_SECONDS."""
        assert self.process is not None
        wait_until(
            done,
            what=what,
            timeout_seconds=SETTLE_TIMEOUT_SECONDS,
            poll_seconds=poll_seconds,
            process=self.process,
            log_tail=self.log_tail,
        )

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]


@pytest.fixture
def daemon(dagster_home: Path, layout: DataLayout, tmp_path: Path) -> Iterator[Daemon]:
    running = Daemon(dagster_home, layout, tmp_path / "daemon.log")
    try:
        yield running
    finally:
        running.stop()


def drop_into_inbox(layout: DataLayout, tmp_path: Path, name: str, lines: list[str]) -> Path:
    """Write a task file elsewhere, then move it into the inbox (as the README says)."""
    staged = tmp_path / name
    staged.write_text("\n".join(lines) + "\n")
    target = layout.inbox_dir / name
    shutil.move(staged, target)
    return target


def sensor_ticks(instance: dg.DagsterInstance, name: str) -> list[str]:
    """The statuses of every tick of sensor `name` (newest first)."""
    states = [s for s in instance.all_instigator_state() if s.name == name]
    assert states, f"{name} was never started"
    (state,) = states
    ticks = instance.get_ticks(state.instigator_origin_id, state.selector_id)
    return [f"{t.status.value}: {t.error.message if t.error else ''}" for t in ticks]


@pytest.mark.slow  # 2-4 minutes: the fault lasts a minute and the retry backoff doubles
def test_sensors_in_the_daemon_materialise_every_task_including_retried_failures(
    site_thread: SiteThread, layout: DataLayout, daemon: Daemon, tmp_path: Path
) -> None:
    good = [f"good-{n:02d}" for n in range(12)]
    timed = [f"timed-{n}" for n in range(3)]  # fail for the first minute, then serve
    gone = "gone-404"
    lines = ["key,url"]
    lines += [f"{key},{site_thread.url(f'/page/{n}')}" for n, key in enumerate(good)]
    lines += [f"{key},{site_thread.url(f'/timed/{key}?fail_seconds=60')}" for key in timed]
    lines += [f"{gone},{site_thread.url('/status/404')}"]
    keys = [*good, *timed, gone]
    # A fresh home, nothing switched on: the inbox and retry sensors ship running.
    daemon.env.pop("SCRAPEFLOW_SENSORS_DEFAULT")
    listed = daemon.cli("sensor", "list")  # (also creates the home's SQLite files, once)
    assert "inbox_sensor" in listed
    daemon.start()
    drop_into_inbox(layout, tmp_path, "tasks.csv", lines)

    settled = [*good, *timed]
    with dg.DagsterInstance.get() as instance:

        def everything_materialised() -> bool:
            if instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME) != keys:
                return False
            return all(
                partition_statuses(instance, asset, settled)
                == dict.fromkeys(settled, Status.MATERIALIZED)
                for asset in ASSETS
            )

        daemon.wait_until(everything_materialised, "every task to be materialised")

        assert partition_statuses(instance, "scrape", [gone]) == {gone: Status.FAILED}
        inbox_ticks = sensor_ticks(instance, "inbox_sensor")
        retry_ticks = sensor_ticks(instance, "retry_sensor")
        retries = instance.get_runs(filters=dg.RunsFilter(tags={"scrapeflow/reason": "retry"}))
        frontier_states = [
            s for s in instance.all_instigator_state() if s.name == "frontier_sensor"
        ]
    assert frontier_states == []  # opt-in: never started, never ticked
    for tick in inbox_ticks + retry_ticks:
        assert tick.split(":")[0] in {"SUCCESS", "SKIPPED", "STARTED"}, tick
    assert any(t.startswith("SUCCESS") for t in inbox_ticks)
    assert any(t.startswith("SUCCESS") for t in retry_ticks)
    # The timed tasks failed their first run and were completed by the retry sensor's runs.
    assert retries
    for key in timed:
        status = load_status(layout.status_dir, key)
        assert status is not None and status["scrape_status"] == "SUCCESS"
    # A permanent failure is not retried: one failed run, still failed.
    status = load_status(layout.status_dir, gone)
    assert status is not None and status["scrape_failures"] == 1
    assert not list(layout.inbox_dir.glob("*.csv"))
    assert [p.name.endswith("-tasks.csv") for p in done_dir(layout).glob("*-tasks.csv")] == [True]


@pytest.mark.slow  # about 2 minutes
def test_killing_the_daemon_in_the_middle_of_an_inbox_tick_loses_no_file_and_no_task(
    site_thread: SiteThread, layout: DataLayout, daemon: Daemon, tmp_path: Path
) -> None:
    count = 600
    urls = {f"kill-{n:04d}": site_thread.url(f"/page/{n % 200}?v={n}") for n in range(count)}
    keys = list(urls)
    lines = ["key,url", *(f"{key},{url}" for key, url in urls.items())]
    assert "Started sensor" in daemon.cli("sensor", "start", "inbox_sensor")
    daemon.start()
    inbox_file = drop_into_inbox(layout, tmp_path, "big.csv", lines)

    # Kill the daemon (and its code server, where the tick runs) once the tick has begun to
    # store tasks, long before it can have finished with the file.
    def storing() -> bool:
        return any(layout.status_dir.glob("kill-*.status.json"))

    daemon.wait_until(storing, "the tick to store tasks", poll_seconds=0.002)
    daemon.kill()

    stored = len(list(layout.status_dir.glob("kill-*.status.json")))
    with dg.DagsterInstance.get() as instance:
        partitions = instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME)
    print(f"killed with {stored} of {count} tasks stored and {len(partitions)} partitions")
    assert stored < count and len(partitions) < count, "the kill came after the tick's work"
    assert inbox_file.exists() or any(accepted_dir(layout).glob("*.json")), "the file was lost"

    daemon.start()
    with dg.DagsterInstance.get() as instance:

        def scraped() -> bool:
            found = partition_statuses(instance, "scrape", keys)
            return found == dict.fromkeys(keys, Status.MATERIALIZED)

        daemon.wait_until(scraped, "every task to be scraped")
        partitions = instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME)
        runs = instance.get_runs(filters=dg.RunsFilter(tags={"scrapeflow/reason": "inbox"}))
    assert partitions == keys, "a partition is missing, duplicated or out of order"
    assert len(runs) == 1, [r.tags for r in runs]
    assert not inbox_file.exists()
    for key, url in urls.items():
        status = load_status(layout.status_dir, key)
        assert status is not None and status["params"] == {"url": url}


@pytest.mark.slow  # up to 2 minutes: the schedule fires on the next minute
def test_the_refresh_schedule_in_the_daemon_re_scrapes_stale_tasks(
    site_thread: SiteThread, layout: DataLayout, daemon: Daemon
) -> None:
    keys = store_tasks(layout, [(f"fresh-{n}", site_thread.url(f"/page/{n}")) for n in range(5)])
    with dg.DagsterInstance.get() as instance:
        add_task_partitions(instance, keys)
    for asset in ("scrape", "validation", "pages"):
        command = materialize_range_command(asset, keys[0], keys[-1])
        done = subprocess.run(
            command, env=daemon.env, cwd=COMMAND_CWD, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-3000:]
    before = {k: load_status(layout.status_dir, k) for k in keys}
    # Every minute, and every task counts as stale: the next minute's tick refreshes them all.
    daemon.env |= {"SCRAPEFLOW_REFRESH_CRON": "* * * * *", "SCRAPEFLOW_REFRESH_MAX_AGE_HOURS": "0"}
    assert "Started schedule" in daemon.cli("schedule", "start", "refresh_schedule")
    # The retry sensor then re-runs the steps built from the old bodies.
    assert "Started" in daemon.cli("sensor", "start", "retry_sensor")
    daemon.start()

    with dg.DagsterInstance.get() as instance:

        def refreshed() -> bool:
            runs = instance.get_runs(filters=dg.RunsFilter(tags={"scrapeflow/reason": "refresh"}))
            return any(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)

        daemon.wait_until(refreshed, "a successful refresh run")
        assert partition_statuses(instance, "scrape", keys) == dict.fromkeys(
            keys, Status.MATERIALIZED
        )
    for key in keys:
        status = load_status(layout.status_dir, key)
        assert status is not None
        assert status["scrape_last_run"] > before[key]["scrape_last_run"]  # type: ignore[index]

    def rebuilt() -> bool:
        statuses = [load_status(layout.status_dir, k) or {} for k in keys]
        if not all(s.get("pages_last_run", "") > s.get("scrape_last_run", "~") for s in statuses):
            return False
        # A status file is written as a task's step ends, its event a moment later (and the
        # minutely refresh may have a run in progress): wait for Dagster's states too.
        with dg.DagsterInstance.get() as instance:
            return all(
                partition_statuses(instance, asset, keys)
                == dict.fromkeys(keys, Status.MATERIALIZED)
                for asset in ("validation", "pages")
            )

    daemon.wait_until(rebuilt, "validation and pages run again on the refreshed bodies")


@pytest.mark.slow  # up to 2 minutes: the schedule fires on the next minute
def test_the_learned_refresh_schedule_in_the_daemon_fetches_within_its_budget(
    site_thread: SiteThread, layout: DataLayout, daemon: Daemon
) -> None:
    rows = [
        {
            "key": f"c{n}",
            "url": site_thread.url(f"/changing/{n}"),
            "revisit_min_seconds": "1",
            "revisit_initial_seconds": "5",  # due 5 s after its first fetch
        }
        for n in range(6)
    ]
    keys = store_tasks(layout, rows)
    with dg.DagsterInstance.get() as instance:
        add_task_partitions(instance, keys)
    for asset in ASSETS:
        command = materialize_range_command(asset, keys[0], keys[-1])
        done = subprocess.run(
            command, env=daemon.env, cwd=COMMAND_CWD, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-3000:]
    before = {k: load_status(layout.status_dir, k) for k in keys}
    later = 48 * 3600.0  # two site days: some pages changed
    request = urllib.request.Request(
        site_thread.url(f"/control/changing/clock?t={later}"), method="POST"
    )
    urllib.request.urlopen(request, timeout=5).close()
    daemon.env |= {
        "SCRAPEFLOW_REFRESH_CRON": "* * * * *",
        "SCRAPEFLOW_REFRESH_POLICY": "learned",
        "SCRAPEFLOW_REFRESH_BUDGET": "2",
    }
    assert "Started schedule" in daemon.cli("schedule", "start", "refresh_schedule")
    daemon.start()

    with dg.DagsterInstance.get() as instance:

        def refreshed() -> bool:
            runs = instance.get_runs(filters=dg.RunsFilter(tags={"scrapeflow/reason": "refresh"}))
            return any(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)

        daemon.wait_until(refreshed, "a successful learned refresh run")
        after = {k: load_status(layout.status_dir, k) for k in keys}
        runs = instance.get_runs(filters=dg.RunsFilter(tags={"scrapeflow/reason": "refresh"}))
    daemon.stop()
    fetched_again = [
        k
        for k in keys
        if after[k]["scrape_last_run"] > before[k]["scrape_last_run"]  # type: ignore[index]
    ]
    # Each run is a range of exactly the tasks chosen (no task between them re-fetched), and
    # no tick asks for more than the budget's 2 (a later tick may have chosen 2 more).
    ranges = [(run.tags[RANGE_START_TAG], run.tags[RANGE_END_TAG]) for run in runs]
    in_runs = {k for first, last in ranges for k in keys[keys.index(first) : keys.index(last) + 1]}
    assert fetched_again and set(fetched_again) <= in_runs and len(fetched_again) < len(keys)
    assert all(keys.index(last) - keys.index(first) < 2 for first, last in ranges)
    for key in fetched_again:
        state = after[key]["pages"]["revisit"]  # type: ignore[index]
        n = int(key[1:])
        assert state["fetches"] == 2 and state["changed"] is (version_at(n, later) > 0)
