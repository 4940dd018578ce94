"""`scrapeflow refresh [--older-than DURATION] [--failed] [--select ASSETS] [--dry-run]`: fetch
again the tasks whose fetch is older than DURATION (default 7d), and run the steps after it on
the new bodies.

A re-fetch is conditional (If-None-Match / If-Modified-Since when the last answer had an ETag or
Last-Modified): a 304 keeps the stored body. Failed tasks are left alone unless `--failed`, and
permanent failures (404, a body too large, a bad URL) and robots.txt refusals are never asked
again. Each contiguous range of the chosen tasks is one real `dagster asset materialize` of the
selected executor assets (by default all: each task down the chain in one pass), with
`refresh_older_than_seconds` set, so a task that turned fresh meanwhile is skipped. Exit 0 when
every run succeeded (or nothing was due), 1 when some task failed, 2 for bad usage.
"""

import argparse
import json
import re
from pathlib import Path

from scrapeflow_dagster.cli import common, materialize
from scrapeflow_dagster.dagster_cli import DEFINITIONS_MODULE
from scrapeflow_dagster.engine.errors import ErrorKind
from scrapeflow_dagster.engine.state.files import iter_statuses
from scrapeflow_dagster.engine.state.schema import error_kind, is_fresh, is_success, utc_now

SUMMARY = "fetch again the tasks older than a duration (conditionally), then the steps after"
DEFAULT_OLDER_THAN = "7d"
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw]?)")
# Failures that asking again cannot fix.
_NEVER_AGAIN = {ErrorKind.PERMANENT.value, ErrorKind.DISALLOWED.value}


def parse_duration(text: str) -> float:
    """Seconds of a duration such as `90`, `30m`, `12h`, `7d`, `2w` (no unit: seconds).

    Raises:
        UsageError: naming the value when it is not such a duration.
    """
    found = _DURATION.fullmatch(text.strip().lower())
    if found is None:
        raise common.UsageError(
            f"--older-than {text!r}: expected a number with an optional unit s, m, h, d or w"
        )
    return float(found.group(1)) * _UNITS[found.group(2) or "s"]


def add_parser(sub: common.Subparsers, parent: argparse.ArgumentParser) -> None:
    """`refresh [--older-than DURATION] [--failed] [--select ASSETS] [--dry-run]`."""
    refresh = common.add_command(
        sub, parent, "refresh", cmd_refresh, summary=SUMMARY, description=__doc__
    )
    refresh.formatter_class = argparse.RawDescriptionHelpFormatter
    refresh.add_argument(
        "--older-than",
        default=DEFAULT_OLDER_THAN,
        metavar="DURATION",
        help=f"fetched longer ago than this: 90 (seconds), 30m, 12h, 7d (default "
        f"{DEFAULT_OLDER_THAN})",
    )
    refresh.add_argument(
        "--failed",
        action="store_true",
        help="also tasks whose fetch failed (not permanent failures or robots.txt refusals)",
    )
    refresh.add_argument(
        "--select",
        metavar="ASSETS",
        help="comma-separated executor assets to run (default: all, upstream first)",
    )
    refresh.add_argument("--dry-run", action="store_true", help="print the runs, start none")
    refresh.add_argument(
        "--module",
        "-m",
        default=DEFINITIONS_MODULE,
        help=f"the code location's module (default {DEFINITIONS_MODULE})",
    )


def cmd_refresh(args: argparse.Namespace) -> int:
    """Run the selected assets over the ranges of stale (and, with `--failed`, failed) tasks."""
    max_age_seconds = parse_duration(args.older_than)
    names = materialize.executor_asset_names(args.module)
    if not names:
        raise common.UsageError(f"{args.module} has no executor assets")
    selected = names if args.select is None else [n.strip() for n in args.select.split(",")]
    unknown = [name for name in selected if name not in names]
    if unknown or not selected:
        raise common.UsageError(
            f"--select {args.select!r}: not executor assets of {args.module}: "
            f"{', '.join(unknown) or 'none given'} (executor assets: {', '.join(names)})"
        )
    layout = common.layout(args)
    fetcher = names[0]
    stale, failed = due_keys(layout.status_dir, fetcher, max_age_seconds, with_failed=args.failed)
    due = stale | failed
    if not due:
        what = "stale or failed" if args.failed else "stale"
        print(f"nothing to refresh: no {what} task (fetched longer ago than {args.older_than})")
        return 0
    print(
        f"refresh: {common.plural(len(stale), 'task')} fetched longer ago than "
        f"{args.older_than}" + (f", {len(failed)} failed" if args.failed else ""),
        flush=True,
    )
    keys, _ = materialize.partitions_of(fetcher)
    ordered = [key for key in keys if key in due]
    chain = [name for name in names if name in selected]  # in the chain's order
    node = _chain_node(names)
    config = {"ops": {node: {"config": {"refresh_older_than_seconds": max_age_seconds}}}}
    ranges, failed_runs = materialize.run_ranges(
        ",".join(chain),
        keys,
        ordered,
        module=args.module,
        data_dir=str(layout.root),
        config_json=json.dumps(config),
        dry_run=args.dry_run,
    )
    if not args.dry_run and len(ranges) > 1:
        print(f"{common.plural(len(ranges), 'run')}: {failed_runs} failed")
    return 1 if failed_runs else 0


def due_keys(
    status_dir: Path, fetcher: str, max_age_seconds: float, *, with_failed: bool
) -> tuple[set[str], set[str]]:
    """`(stale, failed)`: tasks whose `fetcher` step succeeded longer than `max_age_seconds`
    ago, and (with `with_failed`) tasks whose `fetcher` step failed with a kind worth asking
    again."""
    now = utc_now()
    stale: set[str] = set()
    failed: set[str] = set()
    for key, status in iter_statuses(status_dir):
        if is_success(status, fetcher):
            if not is_fresh(status, fetcher, max_age_seconds=max_age_seconds, now=now):
                stale.add(key)
        elif with_failed and error_kind(status, fetcher) not in (None, *_NEVER_AGAIN):
            failed.add(key)
    return stale, failed


def _chain_node(names: list[str]) -> str:
    from scrapeflow_dagster.defs.chain import chain_node_name

    return chain_node_name(names)
