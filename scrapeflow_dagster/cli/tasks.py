"""`scrapeflow tasks add FILE...`: store every valid line's params, then add the keys as `tasks`
partitions. The read-only views (`list`, `show`, `find`) are in `task_views`."""

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from scrapeflow_dagster.cli import common, crawl, progress, task_views
from scrapeflow_dagster.engine.crawl.seeds import with_options
from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.tasks.adding import add_tasks
from scrapeflow_dagster.engine.tasks.intake import LineError, read_task_file

if TYPE_CHECKING:
    import dagster as dg


def add_parser(sub: common.Subparsers, parent: argparse.ArgumentParser) -> None:
    """`tasks add | list | show | find`."""
    tasks = sub.add_parser("tasks", help="add, list, show and find tasks")
    actions = tasks.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = common.add_command(
        actions,
        parent,
        "add",
        cmd_tasks_add,
        summary="add tasks from .txt/.csv/.jsonl files",
        description="Store each valid line's params, then add the keys as `tasks` partitions. "
        "Exit 0: every line added; 1: some lines refused; 2: nothing could be read.",
    )
    add.add_argument("files", nargs="+", metavar="FILE")
    crawl.add_crawl_options(add, depth_required=False)  # seeds the frontier sensor crawls
    task_views.add_parsers(actions, parent)


@dataclass
class _Totals:
    """Counts over all files of one `tasks add`."""

    valid: int = 0
    refused: int = 0
    unreadable_files: int = 0

    def exit_code(self) -> int:
        if not (self.valid or self.refused):
            return 2  # not one task line could be read
        return 1 if self.refused or self.unreadable_files else 0


def cmd_tasks_add(args: argparse.Namespace) -> int:
    """Add the tasks of each file; exit 0 when all lines were added, 1 when some lines were
    refused (or a file could not be read), 2 when no line could be read at all."""
    from scrapeflow_dagster.defs.partitions import add_task_partitions  # Dagster: ~1 s
    from scrapeflow_dagster.instance import get_instance

    options = crawl.crawl_options(args)
    layout = common.layout(args).ensure()
    totals = _Totals()
    instance: dg.DagsterInstance | None = None
    try:
        with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
            for name in args.files:
                path = Path(name)
                items = with_options(progress.file_lines(read_task_file(path), path), options)
                report = add_tasks(layout, items, ledger=ledger)
                refused = [error for error in report.errors if error.line > 0]
                unreadable = [error for error in report.errors if error.line == 0]
                for error in refused:
                    print(f"refused: {error}", file=sys.stderr)
                for error in unreadable:
                    print(f"cannot read {path}: {_reason(error)}", file=sys.stderr)
                totals.unreadable_files += bool(unreadable)
                totals.valid += len(report.keys)
                totals.refused += len(refused)
                if unreadable and not report.keys:
                    continue
                if report.keys and instance is None:
                    instance = get_instance()  # opened only when there is something to add
                added = add_task_partitions(instance, report.keys) if instance else 0
                print(
                    f"{name}: {len(report.keys)} valid tasks ({report.new} new params, "
                    f"{added} new partitions), {len(refused)} lines refused"
                )
    finally:
        if instance is not None:
            instance.dispose()
    code = totals.exit_code()
    if code == 2:
        common.say_error("no task could be read: nothing added")
    return code


def _reason(error: LineError) -> str:
    # The intake says `cannot read: No such file or directory` for the whole file (line 0).
    return error.message.removeprefix("cannot read: ")
