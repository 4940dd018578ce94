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

from scrapeflow_dagster.broker import (
    CELERY_BROKER_ENV,
    configured_broker,
    missing_extra,
)

CELERY_BACKEND_ENV = "SCRAPEFLOW_CELERY_BACKEND"  # default: the broker (Redis keeps results too)
VISIBILITY_TIMEOUT_ENV = "SCRAPEFLOW_CELERY_VISIBILITY_TIMEOUT_SECONDS"
# A task taken by a worker that died (kill -9, lost machine) goes back to the queue after this
# long (Redis broker). It must exceed the longest shard, or a shard still running is delivered
# a second time: Celery's own default.
DEFAULT_VISIBILITY_TIMEOUT_SECONDS = 3600
# How long the run side and the workers wait for a broker that went away (a Redis restart or
# failover) before giving up on it, roughly: past this, a run fails as it did before.
BROKER_OUTAGE_SECONDS = 300
_RETRY_SLEEP_MAX_SECONDS = 5
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

    A broker restart (Redis with its append-only file on) loses no task: queued tasks and those
    taken but not acknowledged are in the file; a worker keeps running its shard through the
    outage (its Dagster events go to Postgres, not the broker), reconnects, and acknowledges the
    shard once it can; the run side waits for the broker instead of failing the run
    (`scaleout/test_broker_restart.py`). Without these settings the run side's first poll of a
    result during the outage raised `ConnectionError` and failed the run, while its shards
    went on running on the workers.
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
        # The run side polls each step's result in the backend (Redis) every second, and the
        # worker stores it there when the step ends: both retry a lost connection (full-jitter
        # backoff up to 5 s) for about BROKER_OUTAGE_SECONDS instead of raising at once.
        "result_backend_always_retry": True,
        "result_backend_max_sleep_between_retries_ms": _RETRY_SLEEP_MAX_SECONDS * 1000,
        "result_backend_max_retries": 2 * BROKER_OUTAGE_SECONDS // _RETRY_SLEEP_MAX_SECONDS,
        # A step submitted while the broker is away (a collect step after the last shard) is
        # published again for about as long (kombu's default gives up after 3 tries, 0.4 s).
        "task_publish_retry_policy": {
            "max_retries": BROKER_OUTAGE_SECONDS // _RETRY_SLEEP_MAX_SECONDS,
            "interval_start": 0,
            "interval_step": 1,
            "interval_max": _RETRY_SLEEP_MAX_SECONDS,
        },
        # Keep running a shard when the broker connection drops (Celery 6 will cancel it by
        # default): the shard does not need the broker until it ends, its message stays unacked
        # in Redis, and the worker acknowledges it after reconnecting. Cancelling would throw
        # away the shard's progress and fail its step.
        "worker_cancel_long_running_tasks_on_connection_loss": False,
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
    """Dagster's Celery executor when the Dagster home records a broker (or
    `SCRAPEFLOW_CELERY_BROKER` names one), else None (Dagster's default: the multiprocess
    executor, one process per step on this machine).

    Requires a Dagster home whose storage every worker reaches (Postgres), and the data dir on
    storage every worker mounts (shard plans and reports, status files, the DuckDB spool).

    Raises:
        CeleryHomeError: naming the home when a broker is set for a SQLite home.
    """
    broker = configured_broker()
    if broker is None:
        return None
    problem = missing_extra("celery", "dagster_celery", "redis")
    if problem is not None:
        raise ImportError(f"runs of this home use Celery workers, but {problem}")
    # The executor reads the broker from the environment at run time (never stored with the
    # job snapshot): a broker the home records is put there for this process and its steps.
    os.environ.setdefault(CELERY_BROKER_ENV, broker)
    from dagster_celery import celery_executor

    return celery_executor.configured(celery_executor_config(), name="scrapeflow_celery")
