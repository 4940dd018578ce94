"""The deployment docs/scale-out.md describes, built for real: three machines on one network
(network namespaces on a bridge), none reaching another through loopback.

- a service host: its own PostgreSQL (Dagster's runs and events) and Redis (the Celery broker,
  and the per-site limits every worker shares), and the site being scraped;
- two worker hosts, each running `scrapeflow worker` on the home `scrapeflow home init
  --postgres ... --celery-broker ...` made;
- this machine as the control host: the `dagster` CLI and `dagster-daemon`, the data folder
  (which every host sees at the same path, as a network mount would give).

3,000 tasks go through `dagster asset materialize` in two shards, one per worker host. Mid-run
one worker host is lost (every process in it SIGKILLed at once). Nothing it finished is fetched
again, its shard is delivered again to the other host, tasks that failed are completed by the
retry sensor in the real daemon, and every task ends materialised. Throughout, the site never
sees more requests in flight than `max_per_host`, counted by the site itself, though each host
alone would hold as many.
"""

import contextlib
import json
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import dagster as dg
import pytest

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.lib.partitions import TASKS_PARTITIONS_NAME
from scrapeflow_dagster.scaleout.celery import VISIBILITY_TIMEOUT_ENV
from scrapeflow_dagster_tests.scaleout.helpers import (
    add_tasks,
    service_missing,
    started_pid,
    step_starts,
    succeeded,
)
from scrapeflow_dagster_tests.scaleout.limited_defs import LIMITS, MAX_PER_HOST
from scrapeflow_dagster_tests.scaleout.workers import worker_on
from scrapeflow_dagster_tests.support.netns import lan
from scrapeflow_dagster_tests.support.partitions import Status, keys_with, partition_statuses
from scrapeflow_dagster_tests.support.paths import BIN_DIR, COMMAND_CWD
from scrapeflow_dagster_tests.support.processes import (
    kill_group,
    process_env,
    run_installed,
    stop_group,
    wait_until,
)
from scrapeflow_dagster_tests.support.service_host import ServiceMissing, postgres_on, redis_on
from scrapeflow_dagster_tests.support.sites import site_process

DEFS = "scrapeflow_dagster_tests.scaleout.limited_defs"
WORKERS = ("worker-a", "worker-b")
TASKS = 3000
TIMED_EVERY = 150  # every 150th task fails for its first FAIL_SECONDS: the retry sensor's work
FAIL_SECONDS = 20
VISIBILITY_SECONDS = 15
SHARD_STEP = "scrape.scrape_shard[{}]"
DAEMON_SETTINGS = {
    "SCRAPEFLOW_SENSOR_INTERVAL_SECONDS": "5",
    "SCRAPEFLOW_RETRY_BACKOFF_SECONDS": "10",
}


class LeaseWatch:
    """The most slot leases a Redis sorted set held at once, sampled every 20 ms in a thread
    from creation to `stop`."""

    def __init__(self, url: str, key: str) -> None:
        import redis

        self._client = redis.Redis.from_url(url, socket_timeout=2)
        self._key = key
        self._peak = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._done.wait(0.02):
            with contextlib.suppress(Exception):  # a slow answer: the next sample
                self._peak = max(self._peak, int(self._client.zcard(self._key)))

    def stop(self) -> int:
        """Stop sampling; returns the peak."""
        self._done.set()
        self._thread.join(timeout=10)
        self._client.close()
        return self._peak


def requests_seen(site: str) -> dict:
    with urllib.request.urlopen(f"{site}/control/requests", timeout=10) as response:
        return dict(json.load(response))


def cli(env: dict[str, str], *args: str) -> str:
    done = run_installed(env, COMMAND_CWD, *args, timeout=180)
    assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.slow  # about 3 minutes
def test_two_worker_hosts_share_a_run_and_its_limits_and_losing_one_loses_nothing(
    layout: DataLayout, tmp_path: Path
) -> None:
    with lan(["services", *WORKERS]) as hosts, contextlib.ExitStack() as services_up:
        services = hosts["services"]
        try:
            postgres_url = services_up.enter_context(postgres_on(services))
            broker = services_up.enter_context(redis_on(services, tmp_path / "redis"))
        except ServiceMissing as missing:
            service_missing(str(missing))
        with site_process(
            pages=10, page_bytes=2000, latency_seconds=0.05, host=services.address,
            prefix=services.exec_prefix(),
        ) as site:  # fmt: skip
            home = tmp_path / "home"
            env = process_env(
                home, layout.root, SCRAPEFLOW_SHARDS="2",
                **{VISIBILITY_TIMEOUT_ENV: str(VISIBILITY_SECONDS)},
            )  # fmt: skip
            # The deployment as the docs set it up: the home records Postgres and the broker.
            home.mkdir()
            cli(env, "scrapeflow", "home", "init", "--postgres", postgres_url,
                "--celery-broker", broker)  # fmt: skip
            keys = [f"t-{n:04d}" for n in range(TASKS)]
            timed = set(keys[TIMED_EVERY // 2 :: TIMED_EVERY])
            rows = [
                (key, f"{site}/timed/{key}?fail_seconds={FAIL_SECONDS}")
                if key in timed
                else (key, f"{site}/flaky/{key}?fail=0")
                for key in keys
            ]
            add_tasks(layout, home, rows)
            for name in WORKERS:
                worker_on(hosts[name], f"{name}@{name}", env, tmp_path / f"{name}.log")

            args = [str(BIN_DIR / "dagster"), "asset", "materialize", "-m", DEFS]
            args += ["--select", "scrape", "--partition-range", f"{keys[0]}...{keys[-1]}"]
            log = tmp_path / "run.log"
            leases = LeaseWatch(broker, f"scrapeflow:host:{site.removeprefix('http://')}:slots")
            with log.open("wb") as out:
                run = subprocess.Popen(args, env=env, cwd=COMMAND_CWD, stdout=out, stderr=out)
            try:
                # Both hosts run a shard: which one where, by the pid that started its step.
                def shard_hosts() -> dict[str, str] | None:
                    found = {}
                    pids = {name: hosts[name].pids() for name in WORKERS}
                    for shard in ("shard_0", "shard_1"):
                        pid = started_pid(home, SHARD_STEP.format(shard))
                        for name in WORKERS:
                            if pid in pids[name]:
                                found[shard] = name
                    return found if len(found) == 2 else None

                where = wait_until(
                    shard_hosts, what="both shards to start, one per worker host",
                    timeout_seconds=180, poll_seconds=0.2, process=run,
                    log_tail=lambda: log.read_text()[-3000:],
                )  # fmt: skip
                assert sorted(where.values()) == sorted(WORKERS)
                wait_until(
                    lambda: len(succeeded(layout, keys)) >= TASKS // 5,
                    what="a fifth of the tasks done", timeout_seconds=180, poll_seconds=0.5,
                    process=run, log_tail=lambda: log.read_text()[-3000:],
                )  # fmt: skip
                lost_name = WORKERS[0]
                (lost_shard,) = [s for s, n in where.items() if n == lost_name]
                lost_at = time.monotonic()
                killed = hosts[lost_name].lose()
                finished_before = succeeded(layout, keys)
                run_code = run.wait(timeout=600)
                run_seconds = time.monotonic() - lost_at
            finally:
                if run.poll() is None:
                    run.kill()
                    run.wait()
                leases_peak = leases.stop()
            after_run = succeeded(layout, keys)

            # The retry sensor, in the real daemon on the control host, completes the failures.
            daemon_env = env | DAEMON_SETTINGS
            cli(daemon_env, "dagster", "sensor", "start", "retry_sensor", "-m", DEFS)
            with (tmp_path / "daemon.log").open("wb") as out:
                daemon = subprocess.Popen(
                    [str(BIN_DIR / "dagster-daemon"), "run", "-m", DEFS],
                    env=daemon_env, cwd=COMMAND_CWD, stdout=out, stderr=subprocess.STDOUT,
                    start_new_session=True,
                )  # fmt: skip
            try:
                with dg.DagsterInstance.from_config(str(home)) as instance:
                    wait_until(
                        lambda: keys_with(
                            partition_statuses(instance, "scrape", keys), Status.MATERIALIZED
                        ) == set(keys),
                        what="the retry sensor to complete every task", timeout_seconds=300,
                        poll_seconds=2, process=daemon,
                        log_tail=lambda: (tmp_path / "daemon.log").read_text()[-4000:],
                    )  # fmt: skip
                    survivor = hosts[WORKERS[1]].pids()
                    runs = instance.get_runs()
                    first = runs[-1]
                    retries = instance.get_runs(
                        filters=dg.RunsFilter(tags={"scrapeflow/reason": "retry"})
                    )
                    retry_steps = [step_starts(instance, r.run_id) for r in retries]
                    lost_step = SHARD_STEP.format(lost_shard)
                    restarted_on = step_starts(instance, first.run_id)[lost_step]
                    partitions = instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME)
            finally:
                stop_group(daemon)
                # Its code server stays in its group after it, waiting (with the service host
                # about to go) on runs it can no longer check: nothing started here stays.
                kill_group(daemon)
            seen = requests_seen(site)

    site_host = site.removeprefix("http://")
    paths = seen["paths"]
    by_client = seen["max_in_flight_by_client"][site_host]
    fetches = {k: paths.get(f"/flaky/{k}") for k in set(keys) - timed}
    again = {k for k, n in fetches.items() if n != 1}
    print(
        f"\n{TASKS} tasks on two worker hosts; {killed} processes of {lost_name} killed, the "
        f"run ended {run_seconds:.1f} s later (visibility timeout {VISIBILITY_SECONDS} s); "
        f"peak in flight at the site {seen['max_in_flight'][site_host]} "
        f"(max_per_host {MAX_PER_HOST}), per host {by_client}, leases in Redis {leases_peak}; "
        f"{len(retries)} retry run(s); "
        f"{len(again)} task(s) in flight on the lost host fetched again"
    )
    assert partitions == keys
    assert succeeded(layout, keys) == set(keys)
    # The run failed for timed tasks only (those of the lost shard may have passed their
    # failing time when it ran again on the other host); the retry sensor completed them.
    left_failed = set(keys) - after_run
    assert run_code != 0
    assert left_failed and left_failed <= timed
    assert restarted_on in survivor
    assert retries and all(set(s.values()) <= survivor for s in retry_steps)
    # Nothing the lost host finished was fetched again; what it had in flight (at most its
    # shard's parallelism) was fetched again on the other host; every other task once.
    assert finished_before - after_run == set()
    assert again.isdisjoint(finished_before)
    assert {fetches[k] for k in again} <= {2} and len(again) <= LIMITS.max_parallelism
    # Both hosts fetched, and together they never held more than max_per_host at the site,
    # through the slots in Redis (the data folder's lock file, which both hosts see on this one
    # kernel, was not what held them: a lease per request in flight).
    assert sorted(by_client) == sorted(hosts[n].address for n in WORKERS)
    assert seen["max_in_flight"][site_host] == MAX_PER_HOST
    assert leases_peak == MAX_PER_HOST
