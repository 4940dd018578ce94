"""`scrapeflow refresh [--older-than DURATION] [--failed] [--select ASSETS] [--dry-run]`: fetch
again the tasks whose fetch is older than DURATION (default 7d), and run the steps after it on
the new bodies.

A re-fetch is conditional (If-None-Match / If-Modified-Since when the last answer had an ETag or
Last-Modified): a 304 keeps the stored body. Failed tasks are left alone unless `--failed`, and
permanent failures (404, a body too large, a bad URL) and robots.txt refusals are never asked
again. Each contiguous range of the chosen tasks is one real `dagster asset materialize` of the
selected executor assets (by default all: each task down the chain in one pass), with
`refresh_older_than_seconds` set, so a task that turned fresh meanwhile is skipped.

A page a crawl's sitemap dates (`lastmod`) after its last fetch has changed: it is fetched again
whatever its age (unconditionally: the sitemap says the stored body is out of date). With
`--trust-lastmod`, a page the sitemap dates before its last fetch is left alone although it is
older than DURATION. Exit 0 when every run succeeded (or nothing was due), 1 when some task
failed, 2 for bad usage.
"""

import argparse
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from scrapeflow_dagster.cli import common, materialize
from scrapeflow_dagster.dagster_cli import DEFINITIONS_MODULE
from scrapeflow_dagster.engine.crawl.lastmods import lastmods
from scrapeflow_dagster.engine.errors import ErrorKind
from scrapeflow_dagster.engine.state.files import iter_statuses
from scrapeflow_dagster.engine.state.schema import (
    error_kind,
    is_fresh,
    is_success,
    last_run,
    utc_now,
)

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
    refresh.add_argument(
        "--trust-lastmod",
        action="store_true",
        help="skip stale pages whose sitemap lastmod is before their last fetch",
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
    due = due_keys(
        layout.status_dir,
        fetcher,
        max_age_seconds,
        with_failed=args.failed,
        lastmods=lastmods(layout),
        trust_lastmod=args.trust_lastmod,
    )
    if not (due.stale or due.failed or due.changed):
        what = "stale or failed" if args.failed else "stale"
        print(f"nothing to refresh: no {what} task (fetched longer ago than {args.older_than})")
        return 0
    print(
        f"refresh: {common.plural(len(due.stale), 'task')} fetched longer ago than "
        f"{args.older_than}"
        + (f", {len(due.failed)} failed" if args.failed else "")
        + (f", {len(due.changed)} changed since (sitemap lastmod)" if due.changed else "")
        + (f", {len(due.unchanged)} left alone (sitemap lastmod)" if due.unchanged else ""),
        flush=True,
    )
    keys, _ = materialize.partitions_of(fetcher)
    chain = [name for name in names if name in selected]  # in the chain's order
    node = _chain_node(names)
    # Changed pages are forced (an unconditional fetch); the rest run with the age limit, so a
    # task that turned fresh meanwhile is skipped.
    groups = [
        (due.stale | due.failed, {"refresh_older_than_seconds": max_age_seconds}),
        (due.changed, {"force": True}),
    ]
    failed_runs = 0
    for group, step_config in groups:
        if not group:
            continue
        ranges, failed = materialize.run_ranges(
            ",".join(chain),
            keys,
            [key for key in keys if key in group],
            module=args.module,
            data_dir=str(layout.root),
            config_json=json.dumps({"ops": {node: {"config": step_config}}}),
            dry_run=args.dry_run,
        )
        failed_runs += failed
        if not args.dry_run and len(ranges) > 1:
            print(f"{common.plural(len(ranges), 'run')}: {failed} failed")
    return 1 if failed_runs else 0


@dataclass
class DueTasks:
    """What a refresh runs: `stale` (older than the limit), `failed` (worth asking again),
    `changed` (dated by a sitemap after their last fetch), and `unchanged` (stale, but dated
    before their last fetch: left alone with `trust_lastmod`)."""

    stale: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    changed: set[str] = field(default_factory=set)
    unchanged: set[str] = field(default_factory=set)


def due_keys(
    status_dir: Path,
    fetcher: str,
    max_age_seconds: float,
    *,
    with_failed: bool,
    lastmods: Mapping[str, datetime] | None = None,
    trust_lastmod: bool = False,
) -> DueTasks:
    """Sort the tasks of `status_dir` by what a refresh does with them (see `DueTasks`): a
    success of `fetcher` older than `max_age_seconds` is stale, a failure of a kind worth
    asking again is failed (with `with_failed`), a success older than its sitemap `lastmod`
    is changed."""
    now = utc_now()
    lastmods = lastmods or {}
    due = DueTasks()
    for key, status in iter_statuses(status_dir):
        if is_success(status, fetcher):
            fetched = last_run(status, fetcher)  # naive UTC
            dated = lastmods.get(key)
            modified = dated.astimezone(UTC).replace(tzinfo=None) if dated else None
            if modified is not None and fetched is not None and modified > fetched:
                due.changed.add(key)
            elif not is_fresh(status, fetcher, max_age_seconds=max_age_seconds, now=now):
                if trust_lastmod and modified is not None:
                    due.unchanged.add(key)
                else:
                    due.stale.add(key)
        elif with_failed and error_kind(status, fetcher) not in (None, *_NEVER_AGAIN):
            due.failed.add(key)
    return due


def _chain_node(names: list[str]) -> str:
    from scrapeflow_dagster.defs.chain import chain_node_name

    return chain_node_name(names)
