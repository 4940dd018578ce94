"""A Celery worker for this code location: it takes the steps (shards) of runs that use the
Celery executor, from the broker the run side uses.

What a worker needs, on any machine: this package installed (the code location importable),
`SCRAPEFLOW_DATA_DIR` on storage every worker mounts, and the broker's URL; the Dagster
instance (Postgres) comes with each task. `scrapeflow worker` becomes the worker (`run_worker`
replaces the process with Celery's, so signals reach it); tests and
benchmarks start workers in the background with `start_worker`.
"""

import os
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import NoReturn

from scrapeflow_dagster.scaleout.celery import (
    CELERY_BACKEND_ENV,
    CELERY_BROKER_ENV,
    CELERY_QUEUE,
    VISIBILITY_TIMEOUT_ENV,
)

CELERY_APP = "scrapeflow_dagster.scaleout.celery_app"


def worker_command(
    *, concurrency: int = 1, name: str | None = None, loglevel: str = "INFO"
) -> list[str]:
    """The command line of a worker (Celery's own `celery worker`, on dagster-celery's tasks).

    Args:
        concurrency: steps the worker runs at once (processes); one per core is the usual.
        name: the worker's node name (default `scrapeflow-<pid>@<host>`), unique per broker.
        loglevel: Celery's log level.

    Raises:
        ValueError: naming `concurrency` when it is not positive.
    """
    if concurrency < 1:
        raise ValueError(f"worker concurrency must be at least 1, got {concurrency}")
    node = name or f"scrapeflow-{os.getpid()}@{socket.gethostname()}"
    return [
        *(sys.executable, "-m", "celery", "-A", CELERY_APP, "worker"),
        *("--queues", CELERY_QUEUE, "--concurrency", str(concurrency)),
        *("--prefetch-multiplier", "1", "--hostname", node, "--loglevel", loglevel),
        "--without-gossip",  # workers need not know each other; less broker chatter
        "--without-mingle",
    ]


def worker_env(
    broker: str,
    *,
    backend: str | None = None,
    visibility_timeout_seconds: int | None = None,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a worker process: `base` (default this process's) plus the broker.

    Raises:
        ValueError: naming the broker when it is not a redis:// or rediss:// URL.
    """
    if not broker.startswith(("redis://", "rediss://")):
        raise ValueError(
            f"broker {broker!r}: only Redis brokers (redis://HOST:PORT/DB) are supported"
        )
    env = dict(os.environ if base is None else base)
    env[CELERY_BROKER_ENV] = broker
    if backend:
        env[CELERY_BACKEND_ENV] = backend
    if visibility_timeout_seconds is not None:
        env[VISIBILITY_TIMEOUT_ENV] = str(visibility_timeout_seconds)
    return env


def start_worker(
    broker: str,
    *,
    concurrency: int = 1,
    name: str | None = None,
    backend: str | None = None,
    visibility_timeout_seconds: int | None = None,
    env: Mapping[str, str] | None = None,
    log_path: Path | None = None,
    cwd: Path | None = None,
) -> "subprocess.Popen[bytes]":
    """Start a worker in the background, in a process group of its own (stop it with
    `os.killpg`); returns the process.

    Args:
        broker: the broker's URL, e.g. `redis://127.0.0.1:6379/0`.
        concurrency: steps the worker runs at once.
        name: the worker's node name.
        backend: the result backend's URL (default: the broker).
        visibility_timeout_seconds: how long before a dead worker's task is delivered again.
        env: the worker's base environment (default this process's): `DAGSTER_HOME`,
            `SCRAPEFLOW_DATA_DIR`.
        log_path: where its output goes (default: inherited).
        cwd: its working directory (where code locations given by module are importable).
    """
    command = worker_command(concurrency=concurrency, name=name)
    child_env = worker_env(
        broker, backend=backend, visibility_timeout_seconds=visibility_timeout_seconds, base=env
    )
    log = open(log_path, "ab") if log_path is not None else None
    try:
        return subprocess.Popen(
            command,
            env=child_env,
            cwd=cwd,
            stdout=log,
            stderr=subprocess.STDOUT if log is not None else None,
            start_new_session=True,
        )
    finally:
        if log is not None:
            log.close()


def run_worker(
    broker: str,
    *,
    concurrency: int = 1,
    name: str | None = None,
    backend: str | None = None,
    loglevel: str = "INFO",
) -> NoReturn:
    """Become the worker: this process is replaced by `celery worker` (same pid), so every
    signal a supervisor or a terminal sends reaches Celery itself. SIGTERM or SIGINT (Ctrl-C):
    warm shutdown, the running step finishes; a second one: cold shutdown, the step is
    abandoned and the broker delivers it again after the visibility timeout. No process of the
    worker outlives it (Celery stops its pool).

    Raises:
        ValueError: naming the broker or the concurrency when they are not usable.
        OSError: when the interpreter cannot be executed.
    """
    command = worker_command(concurrency=concurrency, name=name, loglevel=loglevel)
    env = worker_env(broker, backend=backend)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(command[0], command, env)
