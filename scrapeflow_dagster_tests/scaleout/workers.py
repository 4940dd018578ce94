"""Celery workers of the sharded code location as users start them: the real `scrapeflow
worker` command (which runs `celery worker`) on a temp home, each in its own process group,
stopped or killed by that group; and where a process runs (its parent, its network namespace),
to tell which worker, on which host, ran a step."""

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


def local_worker_name(n: int) -> str:
    """The node name of the `n`-th worker `celery_workers` starts (Celery's `hostname`)."""
    return f"test-{n}-{os.getpid()}@localhost"


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
            command += ["--concurrency", "1", "--name", local_worker_name(n)]
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


def worker_on(
    host: PublicHost, name: str, env: Mapping[str, str], log: Path
) -> "subprocess.Popen[str]":
    """A `scrapeflow worker --concurrency 1` named `name` on the test host `host` (stopped with
    it), logging to `log`; returns it (the Celery main process: `ip netns exec` and `scrapeflow
    worker` exec, they do not fork) once it is ready."""
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
    return worker


def parent_pid(pid: int) -> int | None:
    """The parent of process `pid` (a Celery worker's pool process: the worker's main process),
    None once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    (line,) = [line for line in status.splitlines() if line.startswith("PPid:")]
    return int(line.split()[1])


def net_namespace(pid: int) -> int | None:
    """The network namespace process `pid` lives in (the inode of `/proc/<pid>/ns/net`), None
    once it is gone."""
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except (FileNotFoundError, ProcessLookupError):
        return None


def host_namespace(host: PublicHost) -> int:
    """The network namespace of the test host `host` (its `ip netns` file's inode): the same
    number as `net_namespace` of every process in it, for as long as the host exists."""
    return os.stat(f"/run/netns/{host.name}").st_ino
