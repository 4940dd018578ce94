"""The `dagster` command line the demo runs, and tests and benchmarks run as users would."""

import json
import os
import sys

DEFINITIONS_MODULE = "scrapeflow_dagster.definitions"
# Set when the shipped assets are sharded (`defs.assets.sharding_requested`): shards are steps
# that need processes (or Celery workers) of their own.
SHARDING_ENV = ("SCRAPEFLOW_SHARDS", "SCRAPEFLOW_CELERY_BROKER")
IN_PROCESS = {"config": {"in_process": {}}}


def single_step_config(config_json: str | None, module: str = DEFINITIONS_MODULE) -> str | None:
    """`config_json` with the in-process executor for a run of one unsharded executor asset.

    Such a run is one step: Dagster's default multiprocess executor would start (2-6 s) and stop
    (1-2 s) a step process for it, about half of a small run (the demo's 305 tasks: 25-34 s ->
    14-17 s per asset, measured on a loaded 2-core machine). Left as given for another module,
    sharded assets, or a config that names its own `execution`.

    Raises:
        ValueError: naming `config_json` when it is not a JSON object.
    """
    if module != DEFINITIONS_MODULE or any(os.environ.get(name) for name in SHARDING_ENV):
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
) -> list[str]:
    """`python -m dagster asset materialize` of `asset` over the partitions `first...last`, on
    the in-process executor when that is the faster choice (`single_step_config`).

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
    config_json = single_step_config(config_json, module)
    if config_json is not None:
        command += ["--config-json", config_json]
    return command
