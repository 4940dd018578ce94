"""The executor of runs on this machine: Dagster's default (`multi_or_in_process_executor`:
a process per step, or every step in the run's process when the run config says
`in_process`), whose step processes are forked from a server that has imported the code
location once, instead of each starting a new interpreter.

A new interpreter per step (Dagster's default `spawn`) imports Dagster and the code location
again, 2-3 s per step; a sharded asset has three steps and more (plan, shards, collect).
Forked from a `forkserver` that preloaded Dagster, our storages and the location's module, a
step starts in well under a second: measured on 2 cores, 10,000 tasks through `dagster asset
materialize --select scrape` took 18.1-19.2 s against 21.0-23.6 s (without the location
preloaded); preloading it too saved another 1.7 s of about 30 s in a later session.
A run's config may still name its own `start_method` or `in_process`.
"""

import multiprocessing
from collections.abc import Sequence
from typing import Any

import dagster as dg

# What every step of a shipped asset imports before it starts: Dagster, its storages (ours
# subclass them), the sharded asset's code. A module that is not installed is skipped by the
# forkserver (the Postgres storage without dagster-postgres).
BASE_PRELOAD = (
    "dagster",
    "scrapeflow_dagster.storage.sqlite_batched",
    "scrapeflow_dagster.storage.postgres_batched",
    "scrapeflow_dagster.defs.factory",
    "scrapeflow_dagster.scaleout.sharded_asset",
)


def forkserver_config(preload_modules: Sequence[str] = ()) -> dict[str, Any]:
    """The multiprocess executor config that forks steps from a server which imported
    `BASE_PRELOAD` and `preload_modules` once."""
    preload = list(dict.fromkeys([*BASE_PRELOAD, *preload_modules]))
    return {"multiprocess": {"start_method": {"forkserver": {"preload_modules": preload}}}}


def local_executor(*preload_modules: str) -> dg.ExecutorDefinition:
    """Dagster's default executor with `forkserver` as the default start method of its
    multiprocess mode; same name and config schema, so every run config Dagster's default
    takes (`multiprocess: {max_concurrent: 4}`, `in_process: {}`) means the same. Where the
    platform has no forkserver (Windows) it is Dagster's default unchanged.

    Args:
        *preload_modules: the code location's module (`__name__` of the module that builds
            the definitions), imported by the server before it forks: Dagster preloads only
            its own executor module once a forkserver config is given, so without it every
            step would import the location again (about 1 s of a step's 2-3 s start).
    """
    default = dg.multi_or_in_process_executor
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return default
    return dg.ExecutorDefinition(
        name=default.name,
        config_schema=dg.Field(
            default.config_schema.as_field().config_type,
            default_value=forkserver_config(preload_modules),
        ),
        requirements=default.get_requirements,
        executor_creation_fn=default.executor_creation_fn,
        description="Dagster's multi_or_in_process_executor, step processes forked from a "
        "server that imported the code location once.",
    )


def takes_in_process_config(executor: dg.ExecutorDefinition | None) -> bool:
    """Whether runs on `executor` (None: Dagster's default) may ask for its in-process mode."""
    return executor is None or executor.name == dg.multi_or_in_process_executor.name
