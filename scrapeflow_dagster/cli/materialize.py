"""`scrapeflow materialize ASSET (--missing | --failed | --all)`: run an executor asset over the
`tasks` partitions Dagster has as missing or failed (or all of them), without typing keys.

The partitions are read in order from the Dagster instance and grouped into contiguous ranges
of exactly the selected keys; each range is one real `dagster asset materialize` run, whose
output is passed through. Exit 0 when every run succeeded (or there was nothing to run), 1 when
some run failed (some of its tasks failed), 2 for bad usage.
"""

import argparse
import importlib
import json
import os
import shlex
import subprocess
import warnings
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING

from scrapeflow_dagster.cli import common
from scrapeflow_dagster.dagster_cli import DEFINITIONS_MODULE, materialize_range_command
from scrapeflow_dagster.engine.retry.ranges import plan_ranges
from scrapeflow_dagster.engine.state.layout import DATA_DIR_ENV

if TYPE_CHECKING:
    import dagster as dg

SELECTIONS = ("missing", "failed", "all")
SUMMARY = "run an executor asset over its missing, failed or all task partitions"


def add_parser(sub: common.Subparsers, parent: argparse.ArgumentParser) -> None:
    """`materialize ASSET (--missing | --failed | --all) [--config-json JSON] [--dry-run]`."""
    run = common.add_command(
        sub, parent, "materialize", cmd_materialize, summary=SUMMARY, description=__doc__
    )
    run.formatter_class = argparse.RawDescriptionHelpFormatter
    run.add_argument("asset", metavar="ASSET", help="an executor asset, e.g. scrape")
    which = run.add_mutually_exclusive_group(required=True)
    for name, text in zip(
        SELECTIONS,
        ("never materialised and not failed", "failed in their last run", "every task"),
        strict=True,
    ):
        which.add_argument(
            f"--{name}", dest="which", action="store_const", const=name, help=f"tasks {text}"
        )
    run.add_argument("--config-json", metavar="JSON", help="run config, as `dagster` takes it")
    run.add_argument("--dry-run", action="store_true", help="print the runs, start none")
    run.add_argument(
        "--module",
        "-m",
        default=DEFINITIONS_MODULE,
        help=f"the code location's module (default {DEFINITIONS_MODULE})",
    )


def cmd_materialize(args: argparse.Namespace) -> int:
    """Run `dagster asset materialize` once per contiguous range of the selected partitions."""
    if args.config_json is not None:
        try:
            json.loads(args.config_json)
        except ValueError as exc:
            raise common.UsageError(f"--config-json is not JSON: {exc}") from None
    check_executor_asset(args.asset, args.module)
    keys, statuses = partitions_of(args.asset)
    selected = select_keys(keys, statuses, args.which)
    if not selected:
        print(f"nothing to materialize: no {args.which} task partitions of {args.asset}")
        return 0
    ranges, failed = run_ranges(
        args.asset,
        keys,
        selected,
        module=args.module,
        data_dir=str(common.layout(args).root),
        config_json=args.config_json,
        dry_run=args.dry_run,
    )
    if not args.dry_run and len(ranges) > 1:
        print(f"{common.plural(len(ranges), 'run')}: {failed} failed")
    return 1 if failed else 0


def run_ranges(
    asset: str,
    keys: Sequence[str],
    selected: Sequence[str],
    *,
    module: str,
    data_dir: str,
    config_json: str | None = None,
    dry_run: bool = False,
    log: IO[str] | None = None,
) -> tuple[list[tuple[str, str]], int]:
    """Run `dagster asset materialize` of `asset` once per contiguous range of `selected`
    among the ordered partitions `keys`.

    Args:
        log: where the commands' output and the per-range lines go (their output is passed
            through, and the lines printed, when None).

    Returns:
        The ranges, and how many of their runs failed (exit code not 0).
    """
    # One run per contiguous range, however long: these runs go one after another, so cutting
    # a range (as the sensors do, for the run queue to run its parts at once) would only add a
    # run's fixed cost and its log shard per 10,000 tasks (a 100,000-task refresh: ten of each).
    ranges = plan_ranges(keys, selected, passable=set(), max_partitions_per_run=len(keys))
    position = {key: index for index, key in enumerate(keys)}
    env = {**os.environ, DATA_DIR_ENV: data_dir}
    failed = 0
    for first, last in ranges:
        count = position[last] - position[first] + 1
        size = common.plural(count, "task")
        command = materialize_range_command(
            asset, first, last, module=module, config_json=config_json, tasks=count
        )
        if dry_run:
            print(f"{asset} {first}...{last} ({size}): would run {shlex.join(command)}")
            continue
        print(f"== {asset} {first}...{last} ({size})", file=log, flush=True)
        output = {"stdout": log, "stderr": subprocess.STDOUT} if log is not None else {}
        code = subprocess.run(command, env=env, check=False, **output).returncode  # type: ignore[call-overload]
        failed += code != 0
        outcome = "succeeded" if code == 0 else f"failed (dagster exit {code})"
        print(f"{asset} {first}...{last} ({size}): {outcome}", file=log, flush=True)
    return ranges, failed


def check_executor_asset(asset: str, module: str) -> None:
    """Raise `UsageError` naming `asset` when `module`'s definitions have no such executor asset.

    Executor assets are the assets partitioned by the `tasks` partitions.
    """
    names = executor_asset_names(module)
    if asset not in names:
        raise common.UsageError(
            f"{asset!r} is not an executor asset of {module} (executor assets: {', '.join(names)})"
        )


def executor_asset_names(module: str) -> list[str]:
    """The names of the assets over `tasks` partitions in the definitions of `module`."""
    from scrapeflow_dagster.defs.long_lived import collection_paused

    # The first import of Dagster and the location in `crawl`, `materialize` and `refresh`:
    # without cyclic collections (`defs.long_lived`).
    with collection_paused():
        import dagster as dg

        from scrapeflow_dagster.lib.partitions import TASKS_PARTITIONS_NAME

        with warnings.catch_warnings():  # the asset decorators warn about beta parameters
            warnings.simplefilter("ignore", dg.BetaWarning)
            warnings.simplefilter("ignore", dg.PreviewWarning)
            try:
                loaded = importlib.import_module(module)
            except ImportError as exc:
                raise common.UsageError(f"cannot import {module}: {exc}") from None
    definitions = [v for v in vars(loaded).values() if isinstance(v, dg.Definitions)]
    names: list[str] = []
    for found in definitions:
        for asset in found.assets or ():
            partitions = getattr(asset, "partitions_def", None)
            if (
                isinstance(asset, dg.AssetsDefinition)
                and isinstance(partitions, dg.DynamicPartitionsDefinition)
                and partitions.name == TASKS_PARTITIONS_NAME
            ):
                # In the chain's order (its outputs'); `keys` is a set.
                names += [key.to_user_string() for key in asset.keys_by_output_name.values()]
    return list(dict.fromkeys(names))


def select_keys(
    keys: Sequence[str], statuses: Mapping[str, "dg.AssetPartitionStatus"], which: str
) -> list[str]:
    """The keys of `which` selection (`missing`: no status at all, `failed`, `all`), in order."""
    import dagster as dg

    if which == "all":
        return list(keys)
    if which == "failed":
        return [key for key in keys if statuses.get(key) == dg.AssetPartitionStatus.FAILED]
    return [key for key in keys if statuses.get(key) is None]


def partitions_of(asset: str) -> tuple[list[str], Mapping[str, "dg.AssetPartitionStatus"]]:
    """The `tasks` partitions in order and `asset`'s status of each (Dagster's)."""
    import dagster as dg

    from scrapeflow_dagster.instance import get_instance
    from scrapeflow_dagster.lib.partitions import TASKS_PARTITIONS_NAME, tasks_partitions_def

    instance = get_instance()
    try:
        keys = list(instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME))
        statuses = instance.get_status_by_partition(
            dg.AssetKey.from_user_string(asset), keys, tasks_partitions_def
        )
    finally:
        instance.dispose()
    # None: the asset never ran; a partition without a status is left out (missing).
    return keys, {key: status for key, status in (statuses or {}).items() if status is not None}
