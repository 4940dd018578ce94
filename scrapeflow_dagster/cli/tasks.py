"""`scrapeflow tasks add FILE...`: store every valid line's params, then add the keys as `tasks`
partitions. The read-only views (`list`, `show`, `find`) are in `task_views`."""

import argparse
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path

from scrapeflow_dagster.cli import common, crawl, progress, task_views
from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.state.files import stored_keys
from scrapeflow_dagster.engine.tasks.adding import AddReport, add_tasks
from scrapeflow_dagster.engine.tasks.intake import LineError, read_task_file


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
    refused (or a file could not be read), 2 when no line could be read at all.

    A file is taken in chunks of `CHUNK_LINES` lines, each stored and then added as partitions
    before the next is read, so memory stays flat however long the file: the status folder
    (listed once) is what remembers the keys of earlier chunks.
    """
    from scrapeflow_dagster.engine.crawl.seeding.seeds import with_options  # see `crawl`'s imports
    from scrapeflow_dagster.lib.partitions import TaskPartitions  # Dagster: ~1 s

    options = crawl.crawl_options(args)
    layout = common.layout(args).ensure()
    totals = _Totals()
    partitions: TaskPartitions | None = None
    stored = stored_keys(layout.status_dir)
    try:
        with Ledger(layout.db_path, spool_dir=layout.spool_dir, keep_marker=False) as ledger:
            for name in args.files:
                path = Path(name)
                items = with_options(progress.file_lines(read_task_file(path), path), options)
                done = _FileTotals(keys=set())
                while chunk := list(itertools.islice(items, CHUNK_LINES)):
                    report = add_tasks(layout, chunk, ledger=ledger, stored_keys=stored)
                    stored.update(report.keys)
                    done.take(report, path)
                    if report.keys and partitions is None:
                        partitions = TaskPartitions.open()  # only when there is something to add
                    done.partitions += partitions.add(report.keys) if partitions else 0
                totals.unreadable_files += bool(done.unreadable)
                totals.valid += done.valid
                totals.refused += done.refused
                if done.unreadable and not done.valid:
                    continue
                print(
                    f"{name}: {done.valid} valid tasks ({done.new} new params, "
                    f"{done.partitions} new partitions), {done.refused} lines refused"
                )
    finally:
        if partitions is not None:
            partitions.close()
    code = totals.exit_code()
    if code == 2:
        common.say_error("no task could be read: nothing added")
    return code


# Lines stored (and added as partitions) at a time: the params of a chunk are what a task
# file costs in memory (~5 KB a line held), whatever its length.
CHUNK_LINES = 20_000


@dataclass
class _FileTotals:
    """Counts over the chunks of one file."""

    keys: set[str]  # the file's valid keys so far: a line repeated in a later chunk counts once
    valid: int = 0
    new: int = 0
    refused: int = 0
    unreadable: bool = False
    partitions: int = 0

    def take(self, report: AddReport, path: Path) -> None:
        """Count a chunk's report and print its refused lines."""
        for error in report.errors:
            if error.line > 0:
                print(f"refused: {error}", file=sys.stderr)
                self.refused += 1
            else:
                print(f"cannot read {path}: {_reason(error)}", file=sys.stderr)
                self.unreadable = True
        self.valid += sum(1 for key in report.keys if key not in self.keys)
        self.keys.update(report.keys)
        self.new += report.new


def _reason(error: LineError) -> str:
    # The intake says `cannot read: No such file or directory` for the whole file (line 0).
    return error.message.removeprefix("cannot read: ")
