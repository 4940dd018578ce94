"""The `dagster` command line the demo runs, and tests and benchmarks run as users would."""

import sys

DEFINITIONS_MODULE = "scrapeflow_dagster.definitions"


def materialize_range_command(
    asset: str,
    first: str,
    last: str,
    *,
    module: str = DEFINITIONS_MODULE,
    config_json: str | None = None,
) -> list[str]:
    """`python -m dagster asset materialize` of `asset` over the partitions `first...last`.

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
    if config_json is not None:
        command += ["--config-json", config_json]
    return command
