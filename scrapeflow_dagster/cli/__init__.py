"""The `scrapeflow` command: add and inspect tasks, run executor assets over what is missing or
failed, keep DuckDB in step and export results, serve the test site.

One module per command group, each with `add_parser(sub, parent)` and its `cmd_*` functions:
`tasks` (add) and `task_views` (list, show, find, and `status`), `crawl`, `refresh`, `db`,
`export`, `materialize`, `home` (home init, worker), `site` (site, demo); `common` and
`progress` are shared. Dagster is imported only by the commands that use it, so the others
start fast; and only the module of the command being run is imported (every one for
`scrapeflow --help`): the crawl and refresh modules load aiohttp, parsel and the crawl engine,
0.2-0.3 s that `scrapeflow status` (~2 s at a million tasks) need not pay.

The top floor: may import every package below it (`demo`, `crawling`, `defs`, `dagster_cli`,
`scaleout`, `lib`, `broker`, `instance`, `storage`, `site`, the engine); nothing imports it.
"""

import argparse
import atexit
import importlib
import os
import sys
import threading
from collections.abc import Sequence
from typing import Any, NoReturn

import duckdb

from scrapeflow_dagster.cli import common
from scrapeflow_dagster.engine.history import LedgerLockedError
from scrapeflow_dagster.engine.history.from_status_files.rebuild import NOT_A_DATABASE

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


# The commands' lines in `scrapeflow --help`, which a command not being run shows (held equal
# to what their modules say by `test_cli_commands`).
_SUMMARIES = {
    "tasks": "add, list, show and find tasks",
    "status": "print the status summary",
    "crawl": "crawl from the tasks of a file: follow links within a depth, scope and budget",
    "refresh": "fetch again the tasks older than a duration (conditionally), then the steps after",
    "db": "DuckDB: sync | rebuild | summary | prune",
    "export": "write a result (pages, steps, outputs, ...) to a parquet, csv or jsonl file",
    "materialize": "run an executor asset over its missing, failed or all task partitions",
    "home": "the Dagster home",
    "worker": "run a Celery worker that takes this code location's steps (shards) from the broker",
    "site": "serve the bundled local test site",
    "demo": "scrape the bundled site through Dagster",
}
# In `--help` order: the function of `scrapeflow_dagster.cli.<module>` that adds the parsers of
# its commands (`status` lives with the other read-only views of tasks).
_COMMAND_GROUPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("tasks", "add_parser", ("tasks",)),
    ("task_views", "add_status_parser", ("status",)),
    ("crawl", "add_parser", ("crawl",)),
    ("refresh", "add_parser", ("refresh",)),
    ("db", "add_parser", ("db",)),
    ("export", "add_parser", ("export",)),
    ("materialize", "add_parser", ("materialize",)),
    ("home", "add_parser", ("home", "worker")),
    ("site", "add_parser", ("site", "demo")),
)


def package_version() -> str:
    """The installed version of scrapeflow-dagster."""
    from importlib.metadata import PackageNotFoundError, version  # 30 ms: for --version only

    try:
        return version("scrapeflow-dagster")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


class _VersionAction(argparse.Action):
    """`--version`: the version looked up only when asked for."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        print(f"scrapeflow {package_version()}")  # on stdout, as argparse's own
        parser.exit()


def command_of(argv: Sequence[str]) -> str | None:
    """The command `argv` runs (its first word that is not an option or `--data-dir`'s
    value), or None (`scrapeflow --help`, `--version`, a mistake: every command's parser)."""
    words = iter(argv)
    for word in words:
        if word == "--data-dir":
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of `scrapeflow`: with `command`, only the parsers of its module
    are built (the other commands are listed by name)."""
    parser = argparse.ArgumentParser(
        prog="scrapeflow",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_VersionAction)
    parser.add_argument("--data-dir", help=common.DATA_DIR_HELP)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    parent = common.data_dir_parent()
    for module, function, names in _COMMAND_GROUPS:
        if command is None or command not in _SUMMARIES or command in names:
            add = getattr(importlib.import_module(f"scrapeflow_dagster.cli.{module}"), function)
            add(sub, parent)
        else:
            for name in names:
                sub.add_parser(name, help=_SUMMARIES[name])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `scrapeflow` console script; returns the exit code."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(command_of(arguments)).parse_args(arguments)
    if getattr(args, "module", None) not in (None, "scrapeflow_dagster.definitions"):
        common.look_in_working_directory()
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
