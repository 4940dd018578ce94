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
A run's config may still name its own `start_method` or `in_process`. At its default config a
run whose steps can only follow one another runs in its own process instead and stops the
server started early (`scaleout.one_process_runs`): only runs of several shards fork steps.

In `dagster asset materialize` and `dagster job execute` the server is started as the code
location is built (`start_step_server_early`), so it imports while the command creates the
run and writes its planned events, instead of after: measured on 2 cores (2026-11-27), the
first step of a 10,000-task run started 0.6 s after it was launched instead of 1.9 s.
"""

import json
import multiprocessing
import multiprocessing.forkserver
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dagster as dg

from scrapeflow_dagster.scaleout.one_process_runs import sequential_runs_in_process

# What every step of a shipped asset imports before it starts: Dagster, its storages (ours
# subclass them), the sharded asset's code. A module that is not installed is skipped by the
# forkserver (the Postgres storage without dagster-postgres).
BASE_PRELOAD = (
    "dagster",
    "scrapeflow_dagster.storage.sqlite.event_log",
    "scrapeflow_dagster.storage.postgres.event_log",
    "scrapeflow_dagster.defs.factory",
    "scrapeflow_dagster.scaleout.sharded_asset",
)


# The module Dagster's multiprocess executor puts first in any forkserver preload list.
DAGSTER_EXECUTOR_MODULE = "dagster._core.executor.multiprocess"

# The `dagster` commands that run a job's steps from their own process, on its executor.
STEP_LAUNCHING_COMMANDS = (["asset", "materialize"], ["job", "execute"])

# The step server this process started early (its pid), until a run stops it.
_early_server: list[int] = []


def forkserver_config(preload_modules: Sequence[str] = ()) -> dict[str, Any]:
    """The multiprocess executor config that forks steps from a server which imported
    `BASE_PRELOAD` and `preload_modules` once."""
    preload = _preload_list(preload_modules)
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
    start_step_server_early(preload_modules)
    config = forkserver_config(preload_modules)
    return dg.ExecutorDefinition(
        name=default.name,
        config_schema=dg.Field(default.config_schema.as_field().config_type, default_value=config),
        requirements=default.get_requirements,
        executor_creation_fn=lambda init_context: sequential_runs_in_process(
            init_context, config, before_in_process=stop_early_step_server
        ),
        description="Dagster's multi_or_in_process_executor, step processes forked from a "
        "server that imported the code location once; at its default config, a run whose "
        "steps can only follow one another runs them in its own process.",
    )


def takes_in_process_config(executor: dg.ExecutorDefinition | None) -> bool:
    """Whether runs on `executor` (None: Dagster's default) may ask for its in-process mode."""
    return executor is None or executor.name == dg.multi_or_in_process_executor.name


def start_step_server_early(preload_modules: Sequence[str] = (), argv: Sequence[str] = ()) -> bool:
    """Start the forkserver of step processes now when this process is a `dagster` command
    that launches steps (`STEP_LAUNCHING_COMMANDS`); returns whether it started one.

    Dagster's multiprocess executor sets its preload list (`DAGSTER_EXECUTOR_MODULE`, then
    the config's modules) and starts processes; `multiprocessing` starts a server only when
    none runs, so the run's steps fork from this one, which preloaded the same list. A command
    given a config file, or a `--config-json` that configures the executor (in-process,
    another start method, other modules), starts none; nor does a step process. The server
    ends with this process, as a forkserver does when its parent exits.

    Args:
        preload_modules: the code location's modules, as given to `local_executor`.
        argv: the command line (default: this process's `sys.argv`).
    """
    # A step process (a child of the command, which `multiprocessing` gives its command line)
    # may build the location again: its server would serve nothing.
    if multiprocessing.parent_process() is not None or not _launches_steps(list(argv or sys.argv)):
        return False
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([DAGSTER_EXECUTOR_MODULE, *_preload_list(preload_modules)])
    try:
        multiprocessing.forkserver.ensure_running()
    except OSError:
        return False  # Dagster's executor starts one when it needs it, as before
    pid = getattr(multiprocessing.forkserver._forkserver, "_forkserver_pid", None)
    if isinstance(pid, int):
        _early_server.append(pid)
    return True


def stop_early_step_server() -> bool:
    """Stop the step server `start_step_server_early` started, if it still runs; returns
    whether there was one. A run that forks no step (it runs in this process) calls this: the
    server would spend a core importing the location while the run works.

    It is killed, not asked to stop: a server still importing reads no request, and
    `multiprocessing`'s own stop waits for it. Its state is reset, so a later run of this
    process that forks steps starts a new one.
    """
    if not _early_server:
        return False
    pid = _early_server.pop()
    server = multiprocessing.forkserver._forkserver
    if getattr(server, "_forkserver_pid", None) != pid:
        return False  # not ours any more (multiprocessing replaced it)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    stop = getattr(server, "_stop", None)
    if callable(stop):
        stop()  # closes its pipe, reaps it, forgets it
    return True


def _preload_list(preload_modules: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([*BASE_PRELOAD, *preload_modules]))


def _launches_steps(argv: list[str]) -> bool:
    # `dagster ...` (the console script) or `python -m dagster ...` on the default forkserver:
    # not asked to run in its own process (`scrapeflow materialize` asks that of single-shard
    # runs) or to start steps another way, and without a config file (not read here).
    program = Path(argv[0]) if argv else Path()
    is_dagster = program.name == "dagster" or program.parts[-2:] == ("dagster", "__main__.py")
    if not is_dagster or argv[1:3] not in STEP_LAUNCHING_COMMANDS:
        return False
    if any(arg in ("-c", "--config") or arg.startswith("--config=") for arg in argv):
        return False
    return _forks_from_the_default_server(argv)


def _forks_from_the_default_server(argv: list[str]) -> bool:
    """Whether the command's `--config-json` (if any) leaves the executor's default mode:
    processes forked from the forkserver whose preload list is the location's."""
    for position, arg in enumerate(argv):
        if arg == "--config-json" and position + 1 < len(argv):
            given = argv[position + 1]
        elif arg.startswith("--config-json="):
            given = arg.partition("=")[2]
        else:
            continue
        try:
            config = json.loads(given)
        except ValueError:
            return False  # Dagster names the bad config itself
        execution = config.get("execution") if isinstance(config, dict) else None
        executor_config = execution.get("config") if isinstance(execution, dict) else None
        return not executor_config
    return True
