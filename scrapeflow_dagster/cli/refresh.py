"""`scrapeflow refresh [--due | --older-than DURATION] [--budget N] [--host-budget N] [--failed]
[--select ASSETS] [--dry-run]`: fetch again the tasks whose fetch is older than DURATION
(default 7d), or with `--due` those each page's learned revisit interval says are due, and run
the steps after it on the new bodies.

With `--due`, each page is due when the interval `pages` learned from its fetches has passed
(longer while the page stays the same, shorter when it changes: docs/refresh.md); a page not yet
observed is due when older than DURATION. `--budget` caps the requests of this refresh and
`--host-budget` those per host: when more are due, the fetches that buy the most expected
freshness go first (without `--due`, the oldest fetches).

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
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scrapeflow_dagster.cli import common, materialize
from scrapeflow_dagster.cli.common import parse_duration
from scrapeflow_dagster.dagster_cli import DEFINITIONS_MODULE
from scrapeflow_dagster.engine.crawl.frontier.lastmods import sitemap_hints
from scrapeflow_dagster.engine.revisit.plan import (
    AGED,
    EARLY,
    FAILED,
    LASTMOD,
    DueTask,
    due_tasks,
    host_of,
    plan_refresh,
    worth_asking_again,
)
from scrapeflow_dagster.engine.state.files import iter_statuses
from scrapeflow_dagster.engine.state.schema import (
    is_fresh,
    is_success,
    last_run,
    utc_now,
)

SUMMARY = "fetch again the tasks older than a duration (conditionally), then the steps after"
DEFAULT_OLDER_THAN = "7d"


def add_parser(sub: common.Subparsers, parent: argparse.ArgumentParser) -> None:
    """`refresh [--older-than DURATION] [--failed] [--select ASSETS] [--dry-run]`."""
    refresh = common.add_command(
        sub, parent, "refresh", cmd_refresh, summary=SUMMARY, description=__doc__
    )
    refresh.formatter_class = argparse.RawDescriptionHelpFormatter
    refresh.add_argument(
        "--older-than",
        metavar="DURATION",
        help=f"fetched longer ago than this: 90 (seconds), 30m, 12h, 7d (default "
        f"{DEFAULT_OLDER_THAN}); with --due, for pages not yet observed",
    )
    refresh.add_argument(
        "--due",
        action="store_true",
        help="the pages whose learned revisit interval has passed (docs/refresh.md)",
    )
    refresh.add_argument(
        "--budget",
        type=_requests,
        metavar="N",
        help="fetch at most N pages in this refresh (the most valuable first)",
    )
    refresh.add_argument(
        "--horizon",
        default="1d",
        metavar="DURATION",
        help="with --due and a budget: the time over which a fetch's freshness is counted "
        "(default 1d; about the time between refreshes)",
    )
    refresh.add_argument(
        "--host-budget",
        type=_requests,
        metavar="N",
        help="fetch at most N pages per host in this refresh",
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


def _requests(text: str) -> int:
    """A budget: a whole number of requests >= 0."""
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of requests >= 0")
    return int(text)


def cmd_refresh(args: argparse.Namespace) -> int:
    """Run the selected assets over the ranges of stale (and, with `--failed`, failed) tasks."""
    older_than = args.older_than or DEFAULT_OLDER_THAN
    max_age_seconds = parse_duration(older_than)
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
    dated, frequencies = sitemap_hints(layout)
    if args.due:
        due = learned_due(layout.status_dir, fetcher, max_age_seconds, args, dated, frequencies)
    else:
        due = due_keys(
            layout.status_dir,
            fetcher,
            max_age_seconds,
            with_failed=args.failed,
            lastmods=dated,
            trust_lastmod=args.trust_lastmod,
        )
        due = within_budget(due, args.budget, args.host_budget)
    if not (due.stale or due.failed or due.changed):
        what = "stale or failed" if args.failed else "stale"
        if args.due:
            print(f"nothing to refresh: no task is due{' or failed' if args.failed else ''}")
        else:
            print(f"nothing to refresh: no {what} task (fetched longer ago than {older_than})")
        return 0
    stale_words = (
        "due or worth the budget"
        if args.due and (args.budget is not None or args.host_budget is not None)
        else "due"
        if args.due
        else f"fetched longer ago than {older_than}"
    )
    print(
        f"refresh: {common.plural(len(due.stale), 'task')} {stale_words}"
        + (f", {len(due.failed)} failed" if args.failed else "")
        + (f", {len(due.changed)} changed since (sitemap lastmod)" if due.changed else "")
        + (f", {len(due.unchanged)} left alone (sitemap lastmod)" if due.unchanged else "")
        + (f", {due.over_budget} left for later (budget)" if due.over_budget else ""),
        flush=True,
    )
    keys, _ = materialize.partitions_of(fetcher)
    chain = [name for name in names if name in selected]  # in the chain's order
    node = _chain_node(names)
    # Changed pages are forced (an unconditional fetch); the rest run with the age limit, so a
    # task that turned fresh meanwhile is skipped.
    # A learned plan chose its tasks by their own intervals: none is skipped as fresh.
    age_limit = 0.0 if args.due else max_age_seconds
    groups = [
        (due.stale | due.failed, {"refresh_older_than_seconds": age_limit}),
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
    over_budget: int = 0  # due, and left for a later refresh by the budgets
    # The tasks above as a budget ranks them (`within_budget`); not part of equality.
    ranked: list[DueTask] = field(default_factory=list, compare=False, repr=False)


def learned_due(
    status_dir: Path,
    fetcher: str,
    unlearned_seconds: float,
    args: argparse.Namespace,
    dated: Mapping[str, datetime],
    frequencies: Mapping[str, str],
) -> DueTasks:
    """`--due`: the tasks the learned schedule says are due (and, with `--failed`, failed
    tasks worth asking again), within the budgets (`engine.revisit.plan`), in one pass over
    the status files; with `--budget`, pages not yet due compete for its spare requests."""
    found = due_tasks(
        iter_statuses(status_dir),
        fetcher,
        utc_now(),
        unlearned_seconds=unlearned_seconds,
        lastmods=dated,
        changefreqs=frequencies,
        horizon_seconds=parse_duration(args.horizon, "--horizon"),
        any_time=args.budget is not None,  # a budget goes where it buys the most
        with_failed=args.failed,
    )
    chosen = plan_refresh(found, budget=args.budget, host_budget=args.host_budget)
    waiting = sum(1 for task in found if task.reason != EARLY)
    due = DueTasks(over_budget=waiting - sum(1 for task in chosen if task.reason != EARLY))
    for task in chosen:
        group = {LASTMOD: due.changed, FAILED: due.failed}.get(task.reason, due.stale)
        group.add(task.key)
    return due


def within_budget(due: DueTasks, budget: int | None, host_budget: int | None) -> DueTasks:
    """`due` cut to the budgets: the pages a sitemap dated first, then the oldest fetches,
    then failed tasks (`due.ranked`, filled by `due_keys`)."""
    if budget is None and host_budget is None:
        return due
    chosen = {t.key for t in plan_refresh(due.ranked, budget=budget, host_budget=host_budget)}
    return DueTasks(
        stale=due.stale & chosen,
        failed=due.failed & chosen,
        changed=due.changed & chosen,
        unchanged=due.unchanged,
        over_budget=len(due.ranked) - len(chosen),
    )


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
                reason = LASTMOD
            elif not is_fresh(status, fetcher, max_age_seconds=max_age_seconds, now=now):
                if trust_lastmod and modified is not None:
                    due.unchanged.add(key)
                    continue
                due.stale.add(key)
                reason = AGED
            else:
                continue
            when = fetched or now
            age = (now - when).total_seconds()  # the oldest first
            due.ranked.append(DueTask(key, _host(status), when, when, 0.0, age, reason))
        elif with_failed and worth_asking_again(status, fetcher):
            due.failed.add(key)
            due.ranked.append(DueTask(key, _host(status), now, now, 0.0, 0.0, FAILED))
    return due


def _host(status: Mapping[str, Any]) -> str:
    return host_of((status.get("params") or {}).get("url"))


def _chain_node(names: list[str]) -> str:
    from scrapeflow_dagster.lib.chain import chain_node_name

    return chain_node_name(names)
