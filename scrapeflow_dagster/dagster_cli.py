"""The `dagster` command line the demo runs, and tests and benchmarks run as users would."""

import json
import sys
from typing import Any

from scrapeflow_dagster.broker import CELERY_BROKER_ENV, configured_broker
from scrapeflow_dagster.scaleout.sizing import one_shard_run

DEFINITIONS_MODULE = "scrapeflow_dagster.definitions"
__all__ = ["CELERY_BROKER_ENV", "DEFINITIONS_MODULE", "materialize_range_command"]
IN_PROCESS: dict[str, Any] = {"config": {"in_process": {}}}


def single_step_config(
    config_json: str | None, module: str = DEFINITIONS_MODULE, *, tasks: int | None = None
) -> str | None:
    """`config_json` with the in-process executor for a run of the shipped executor assets (one
    or several: they are one chain step) over `tasks` tasks that is a single shard (unsharded,
    or too few tasks to split).

    Such a run is one engine pass: Dagster's default multiprocess executor would start (2-6 s)
    and stop (1-2 s) a process per step for it, about half of a small run (the demo's 305
    tasks: 25-34 s -> 14-17 s per asset, measured on a loaded 2-core machine). Left as given
    for another module, runs of several shards (they need processes to run side by side),
    Celery, or a config that names its own `execution`.

    Raises:
        ValueError: naming `config_json` when it is not a JSON object.
    """
    if (
        module != DEFINITIONS_MODULE
        or configured_broker() is not None  # runs go to Celery workers: no in-process choice
        or not one_shard_run(tasks)
    ):
        return config_json
    config = json.loads(config_json) if config_json else {}
    if not isinstance(config, dict):
        raise ValueError(f"--config-json {config_json!r}: expected a JSON object")
    if "execution" in config:
        return config_json
    return json.dumps({**config, "execution": IN_PROCESS})


def materialize_range_command(
    asset: str,
    first: str,
    last: str,
    *,
    module: str = DEFINITIONS_MODULE,
    config_json: str | None = None,
    tasks: int | None = None,
) -> list[str]:
    """`python -m dagster asset materialize` of `asset` (or several, comma-separated) over the
    partitions `first...last` (`tasks` of them, when known), on the in-process executor when
    that is the faster choice (`single_step_config`).

    Runs with this interpreter, so the command sees the same installed packages.
    """
    command = [
        sys.executable,
        "-m",
        "dagster",
        "asset",
        "materialize",
        "-m",
        module,
        "--select",
        asset,
        "--partition-range",
        f"{first}...{last}",
    ]
    config_json = single_step_config(config_json, module, tasks=tasks)
    if config_json is not None:
        command += ["--config-json", config_json]
    return command
