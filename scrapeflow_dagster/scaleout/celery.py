"""Dagster's Celery executor (dagster-celery), chosen from the environment when the definitions
load: with `SCRAPEFLOW_CELERY_BROKER` set, every step of a run (each shard of a sharded asset)
is a Celery task that any worker of this code location may take (`scaleout.worker`).

The run side (the executor) and the worker side (`celery_app`) build their Celery settings
from the same function, so they always agree on the broker, the result backend and the
delivery guarantees.
"""

import os
from typing import Any

import dagster as dg

CELERY_BROKER_ENV = "SCRAPEFLOW_CELERY_BROKER"
CELERY_BACKEND_ENV = "SCRAPEFLOW_CELERY_BACKEND"  # default: the broker (Redis keeps results too)
VISIBILITY_TIMEOUT_ENV = "SCRAPEFLOW_CELERY_VISIBILITY_TIMEOUT_SECONDS"
# A task taken by a worker that died (kill -9, lost machine) goes back to the queue after this
# long (Redis broker). It must exceed the longest shard, or a shard still running is delivered
# a second time: Celery's own default.
DEFAULT_VISIBILITY_TIMEOUT_SECONDS = 3600
CELERY_QUEUE = "dagster"  # dagster-celery's default queue; workers listen on it


def visibility_timeout_seconds() -> int:
    """`SCRAPEFLOW_CELERY_VISIBILITY_TIMEOUT_SECONDS`, or the default.

    Raises:
        ValueError: naming the variable when it is not a positive whole number.
    """
    raw = os.environ.get(VISIBILITY_TIMEOUT_ENV) or str(DEFAULT_VISIBILITY_TIMEOUT_SECONDS)
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{VISIBILITY_TIMEOUT_ENV} must be a positive whole number, got {raw!r}")
    return int(raw)


def celery_settings(*, visibility_timeout: int) -> dict[str, Any]:
    """Celery settings (lowercase names) of both the run side and the workers.

    A task is acknowledged when it ends, not when a worker takes it (`task_acks_late`), and a
    worker whose process dies gives its task back (`task_reject_on_worker_lost`): a shard of a
    killed worker is delivered again, and the engine skips what that worker had finished (its
    status files say SUCCESS). One task at a time per worker process (`prefetch 1`), so a
    queued shard waits for an idle worker instead of one busy worker.
    """
    transport = {
        "visibility_timeout": visibility_timeout,
        # Live workers look for tasks of dead ones every this many seconds (kombu's default
        # is up to 100 s between two looks): a quarter of the timeout, at most 60 s.
        "unacked_restore_interval": max(1, min(60, visibility_timeout // 4)),
        "unacked_restore_throttle": 1,
    }
    return {
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "broker_transport_options": transport,
        "broker_connection_retry_on_startup": True,
    }


def celery_executor_config() -> dict[str, Any]:
    """The `celery_executor` config: broker and backend from the environment at run time
    (`{"env": ...}`, so a password in the URL is never stored with the job snapshot)."""
    backend_env = CELERY_BACKEND_ENV if os.environ.get(CELERY_BACKEND_ENV) else CELERY_BROKER_ENV
    return {
        "broker": {"env": CELERY_BROKER_ENV},
        "backend": {"env": backend_env},
        "config_source": celery_settings(visibility_timeout=visibility_timeout_seconds()),
    }


def executor_from_env() -> dg.ExecutorDefinition | None:
    """Dagster's Celery executor when `SCRAPEFLOW_CELERY_BROKER` is set, else None (Dagster's
    default: the multiprocess executor, one process per step on this machine).

    Requires a Dagster home whose storage every worker reaches (Postgres), and the data dir on
    storage every worker mounts (shard plans and reports, status files, the DuckDB spool).
    """
    if not os.environ.get(CELERY_BROKER_ENV):
        return None
    from dagster_celery import celery_executor

    return celery_executor.configured(celery_executor_config(), name="scrapeflow_celery")
