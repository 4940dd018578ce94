"""`scrapeflow worker` stops when told, as Celery does, and leaves no process behind: it becomes
the Celery worker (same pid), so a signal sent to it (by a terminal, a supervisor) reaches
Celery. SIGTERM or one SIGINT while it runs a shard: warm shutdown, the shard finishes first; a
second SIGINT: cold shutdown, the shard is abandoned. Either way no process of the worker (its
pool included) is left once it has exited."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.scaleout.celery import CELERY_BROKER_ENV
from scrapeflow_dagster_tests.scaleout.helpers import (
    SHARDED_DEFS,
    add_tasks,
    started_pid,
    succeeded,
)
from scrapeflow_dagster_tests.scaleout.workers import celery_workers
from scrapeflow_dagster_tests.support.paths import BIN_DIR, COMMAND_CWD
from scrapeflow_dagster_tests.support.processes import process_env, wait_until
from scrapeflow_dagster_tests.support.sites import site_process

SHARD = "executor_chain.executor_chain_shard[shard_0]"
# One shard of 30 slow pages, two at a time: ~5 s of work to interrupt.
CONFIG = json.dumps(
    {"resources": {"scrape_settings": {"config": {"max_parallelism": 2, "max_attempts": 1}}}}
)


def processes_named(text: str) -> list[int]:
    """Pids of the live processes whose command line holds `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize(
    ("signals", "warm"),
    [((signal.SIGTERM,), True), ((signal.SIGINT,), True), ((signal.SIGINT, signal.SIGINT), False)],
    ids=["sigterm-warm", "sigint-warm", "two-sigints-cold"],
)
def test_a_signalled_worker_shuts_down_as_celery_does_and_leaves_no_process(
    signals: tuple[signal.Signals, ...],
    warm: bool,
    postgres_home: Path,
    redis_broker: str,
    layout: DataLayout,
    tmp_path: Path,
) -> None:
    env = process_env(
        postgres_home, layout.root, SCRAPEFLOW_SHARDS="1", **{CELERY_BROKER_ENV: redis_broker}
    )
    with site_process(pages=30, page_bytes=2000, latency_seconds=0.3) as base_url:
        keys = add_tasks(
            layout, postgres_home, [(f"s-{n:02d}", f"{base_url}/page/{n}") for n in range(30)]
        )
        with celery_workers(
            redis_broker, env, tmp_path, count=1, visibility_timeout_seconds=60
        ) as workers:
            worker = workers[0]
            node = next(
                arg for arg in worker.args if isinstance(arg, str) and arg.startswith("test-0-")
            )
            args = [str(BIN_DIR / "dagster"), "asset", "materialize", "-m", SHARDED_DEFS]
            args += ["--select", "scrape", "--partition-range", f"{keys[0]}...{keys[-1]}"]
            args += ["--config-json", CONFIG]
            log = tmp_path / "run.log"
            with log.open("wb") as out:
                run = subprocess.Popen(
                    args, env=env, cwd=COMMAND_CWD, stdout=out, stderr=out, start_new_session=True
                )
            try:
                wait_until(
                    lambda: started_pid(postgres_home, SHARD),
                    what="the shard to start on the worker",
                    timeout_seconds=90,
                    poll_seconds=0.2,
                    process=run,
                    log_tail=lambda: log.read_text()[-3000:],
                )
                wait_until(
                    lambda: len(succeeded(layout, keys)) >= 2,
                    what="the shard to finish a few tasks",
                    timeout_seconds=60,
                    poll_seconds=0.05,
                )
                assert len(processes_named(node)) >= 2  # Celery's main process and its pool
                for sig in signals:
                    os.kill(worker.pid, sig)
                    time.sleep(0.5)
                worker.wait(timeout=60)
                done_at_exit = succeeded(layout, keys)
                left = processes_named(node)
            finally:
                os.killpg(run.pid, signal.SIGKILL)
                run.wait()

    assert left == [], f"processes of the worker left behind: {left}"
    if warm:
        assert done_at_exit == set(keys)  # the running shard finished first
    else:
        assert len(done_at_exit) < len(keys)  # abandoned mid-shard
