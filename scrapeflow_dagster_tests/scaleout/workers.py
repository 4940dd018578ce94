"""Celery workers of the sharded code location as users start them: the real `scrapeflow
worker` command (which runs `celery worker`) on a temp home, each in its own process group,
stopped or killed by that group."""

import os
import signal
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from scrapeflow_dagster.scaleout.celery import VISIBILITY_TIMEOUT_ENV
from scrapeflow_dagster_tests.support.netns import PublicHost
from scrapeflow_dagster_tests.support.paths import BIN_DIR, COMMAND_CWD
from scrapeflow_dagster_tests.support.processes import stop_group, wait_until


@contextmanager
def celery_workers(
    broker: str,
    env: Mapping[str, str],
    log_dir: Path,
    *,
    count: int,
    visibility_timeout_seconds: int,
) -> Iterator[list["subprocess.Popen[bytes]"]]:
    """`count` workers (one step at a time each) on `broker`, ready when this yields; stopped
    (their process groups) afterwards."""
    workers = []
    try:
        for n in range(count):
            log = log_dir / f"worker-{n}.log"
            command = [str(BIN_DIR / "scrapeflow"), "worker", "--broker", broker]
            command += ["--concurrency", "1", "--name", f"test-{n}-{os.getpid()}@localhost"]
            with open(log, "ab") as output:
                workers.append(
                    subprocess.Popen(
                        command,
                        env={**env, VISIBILITY_TIMEOUT_ENV: str(visibility_timeout_seconds)},
                        cwd=COMMAND_CWD,
                        stdout=output,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
        for n, worker in enumerate(workers):
            log = log_dir / f"worker-{n}.log"
            wait_until(
                lambda log=log: log.exists() and b" ready." in log.read_bytes(),
                what=f"celery worker {n} ready",
                timeout_seconds=60,
                poll_seconds=0.2,
                process=worker,
                log_tail=lambda log=log: log.read_text()[-3000:],
            )
        yield workers
    finally:
        for worker in workers:
            stop_group(worker, timeout_seconds=20)


def kill_worker_of(pid: int, workers: list["subprocess.Popen[bytes]"]) -> "subprocess.Popen[bytes]":
    """SIGKILL the whole worker (main process and pool) one of whose processes is `pid`;
    returns it, reaped."""
    group = os.getpgid(pid)
    (worker,) = [w for w in workers if w.pid == group]
    os.killpg(group, signal.SIGKILL)
    worker.wait(timeout=30)
    return worker


def worker_on(host: PublicHost, name: str, env: Mapping[str, str], log: Path) -> None:
    """A `scrapeflow worker --concurrency 1` named `name` on the test host `host` (stopped with
    it), logging to `log`; returns once it is ready."""
    with log.open("wb") as out:
        worker = host.start(
            [str(BIN_DIR / "scrapeflow"), "worker", "--concurrency", "1", "--name", name],
            env=dict(env), cwd=COMMAND_CWD, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    wait_until(
        lambda: b" ready." in log.read_bytes(),
        what=f"the worker {name}",
        timeout_seconds=120,
        poll_seconds=0.2,
        process=worker,
        log_tail=lambda: log.read_text()[-3000:],
    )
