"""The executor of runs on this machine: Dagster's default (`multi_or_in_process_executor`:
a process per step, or every step in the run's process when the run config says
`in_process`), whose step processes are forked from a server that has imported the code
location once, instead of each starting a new interpreter.

A new interpreter per step (Dagster's default `spawn`) imports Dagster and the code location
again, 2-3 s per step; a sharded asset has three steps and more (plan, shards, collect).
Forked from a `forkserver` that preloaded the job's module (Dagster's own choice for that
start method), a step starts in a fraction of a second: measured on 2 cores, 10,000 tasks
through `dagster asset materialize --select scrape` took 18.1-19.2 s against 21.0-23.6 s.
A run's config may still name its own `start_method` or `in_process`.
"""

import multiprocessing

import dagster as dg

FORKSERVER = {"multiprocess": {"start_method": {"forkserver": {}}}}


def local_executor() -> dg.ExecutorDefinition:
    """Dagster's default executor with `forkserver` as the default start method of its
    multiprocess mode; same name and config schema, so every run config Dagster's default
    takes (`multiprocess: {max_concurrent: 4}`, `in_process: {}`) means the same. Where the
    platform has no forkserver (Windows) it is Dagster's default unchanged."""
    default = dg.multi_or_in_process_executor
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return default
    return dg.ExecutorDefinition(
        name=default.name,
        config_schema=dg.Field(
            default.config_schema.as_field().config_type, default_value=FORKSERVER
        ),
        requirements=default.get_requirements,
        executor_creation_fn=default.executor_creation_fn,
        description="Dagster's multi_or_in_process_executor, step processes forked from a "
        "server that imported the code location once.",
    )


def takes_in_process_config(executor: dg.ExecutorDefinition | None) -> bool:
    """Whether runs on `executor` (None: Dagster's default) may ask for its in-process mode."""
    return executor is None or executor.name == dg.multi_or_in_process_executor.name
