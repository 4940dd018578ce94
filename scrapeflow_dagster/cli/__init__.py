"""The `scrapeflow` command: add and inspect tasks, run executor assets over what is missing or
failed, keep DuckDB in step and export results, serve the test site.

One module per command group, each with `add_parser(sub, parent)` and its `cmd_*` functions:
`tasks` (add) and `task_views` (list, show, find, and `status`), `crawl`, `refresh`, `db`,
`export`, `materialize`, `home` (home init, worker), `site` (site, demo); `common` and
`progress` are shared. Dagster is imported only by the commands that use it, so the others
start fast.
"""

import argparse
import atexit
import os
import sys
import threading
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import NoReturn

import duckdb

from scrapeflow_dagster.cli import (
    common,
    crawl,
    db,
    export,
    home,
    materialize,
    refresh,
    site,
    task_views,
    tasks,
)
from scrapeflow_dagster.engine.history import LedgerLockedError
from scrapeflow_dagster.engine.history.rebuild import NOT_A_DATABASE

DESCRIPTION = (
    "Add tasks, see their status, run executor assets, keep DuckDB in step, export results."
)
EPILOG = """exit codes:
  0  done (also: nothing to materialize)
  1  some input refused (tasks add, crawl), some runs failed (materialize, refresh: some
     tasks failed), no task found (tasks find); a crawl that finished exits 0 even if pages
     failed
  2  nothing done: bad usage, nothing could be read, DuckDB held by another process,
     an unusable data folder
"""


class _StatusCommand:
    """`status` lives with the other read-only views of tasks (`task_views`)."""

    add_parser = staticmethod(task_views.add_status_parser)


_COMMAND_MODULES = (tasks, _StatusCommand, crawl, refresh, db, export, materialize, home, site)


def package_version() -> str:
    """The installed version of scrapeflow-dagster."""
    try:
        return version("scrapeflow-dagster")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `scrapeflow`."""
    parser = argparse.ArgumentParser(
        prog="scrapeflow",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"scrapeflow {package_version()}")
    parser.add_argument("--data-dir", help=common.DATA_DIR_HELP)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    parent = common.data_dir_parent()
    for module in _COMMAND_MODULES:
        module.add_parser(sub, parent)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `scrapeflow` console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (common.UsageError, LedgerLockedError, OSError, ValueError) as exc:
        common.say_error(exc)
        return 2
    except duckdb.Error as exc:
        # A broken DuckDB file, an export target DuckDB cannot write: said, not a traceback.
        message = f"DuckDB: {exc}"
        if NOT_A_DATABASE in str(exc):
            message += (
                f" ({common.layout(args).db_path}: `scrapeflow db rebuild` makes a new one from "
                "the status files and keeps the old one aside)"
            )
        common.say_error(message)
        return 2


def console_main() -> NoReturn:
    """The `scrapeflow` console script (and `python -m scrapeflow_dagster.cli`): `main`, then
    the interpreter's exit without its module teardown.

    A command that ran Dagster has imported some 2,000 modules; tearing them down after the
    work is done took 0.4-0.6 s of a 3.6-4.4 s crawl (2026-11-26). By then every command has
    closed what it opened (files, DuckDB, the Dagster instance) and waited for what it started,
    so this does what the interpreter's exit does that matters: waits for non-daemon threads,
    runs the atexit handlers (logging's, multiprocessing's), flushes the standard streams, and
    then ends the process with `main`'s exit code. An exception out of `main` (a traceback,
    Ctrl-C, argparse's exit) takes the interpreter's usual path.
    """
    exit_now(main())


def exit_now(code: int) -> NoReturn:
    """End the process with `code` as `console_main` does (see there): threads shut down and
    atexit handlers run as at the interpreter's exit, the standard streams flushed, no module
    teardown."""
    # What the interpreter runs first at exit: waits for non-daemon threads, after stopping
    # idle thread-pool workers (`threading._register_atexit` hooks) and marking the main
    # thread done (a thread may wait for it).
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`scrapeflow ... | head`)
            pass
    os._exit(code)


if __name__ == "__main__":
    console_main()
