"""`scrapeflow status`: scrapeflow's status summary (status strings x executors)."""

import argparse

from scrapeflow_dagster.cli import common
from scrapeflow_dagster.engine.state.files import iter_status_files
from scrapeflow_dagster.engine.status import status_summary


def add_parser(sub: common.Subparsers, parent: argparse.ArgumentParser) -> None:
    """`status`."""
    common.add_command(sub, parent, "status", cmd_status, summary="print the status summary")


def cmd_status(args: argparse.Namespace) -> int:
    """Print the counts of each status string per executor, or what there is before any run."""
    status_dir = common.layout(args).status_dir
    if not status_dir.is_dir():
        common.say_error(f"no status folder at {status_dir}")
        return 1
    summary = status_summary(status_dir)
    if not summary.empty:
        print(summary.to_string())
        return 0
    stored = sum(1 for _ in iter_status_files(status_dir))
    print(f"{common.plural(stored, 'task')} stored, none run yet" if stored else "no tasks yet")
    return 0
