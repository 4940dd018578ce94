"""`scrapeflow tasks list | show | find` and `scrapeflow status`: tasks as their status files
(and DuckDB) hold them.

Read-only, and without Dagster: the status files are the truth about each task.
"""

import argparse
import sys
from pathlib import Path
from typing import Any

import duckdb
import orjson

from scrapeflow_dagster.cli import common
from scrapeflow_dagster.engine.errors import StatusFileError
from scrapeflow_dagster.engine.history import (
    LedgerLockedError,
    StatusCounts,
    connect_readonly,
    count_statuses,
)
from scrapeflow_dagster.engine.redact import redact, redact_params
from scrapeflow_dagster.engine.state import schema
from scrapeflow_dagster.engine.state.files import (
    iter_status_files,
    iter_statuses,
    load_status,
    status_path,
)
from scrapeflow_dagster.engine.tasks.keys import validate_key

_LIST_SUMMARY = "one line per task: key, each executor's last outcome, URL"
_SHOW_SUMMARY = "a task's params and each executor's last run"
_FIND_SUMMARY = "keys whose URL contains the text (DuckDB, else status files); exit 1 when none"
_NEVER_RAN = "-"
_OUTPUT_CHARS = 300
# `tasks find` falls back to the status files rather than wait long for a busy DuckDB.
_FIND_LOCK_TIMEOUT_SECONDS = 2.0
# `status` too: a run's closing sync holds DuckDB for about a second.
_STATUS_LOCK_TIMEOUT_SECONDS = 2.0
_STATUS_SUMMARY = "print the status summary"
_STATUS_DESCRIPTION = (
    "Tasks per status and executor, as the status files say: counted by DuckDB, and read from "
    "the files only where DuckDB may lag behind them (rows a run has not spooled yet, or lost "
    "when it was killed: those are recorded again). An error's message is cut to 48 "
    "characters and shown without credentials (whole messages: `tasks show KEY`)."
)


def add_status_parser(sub: common.Subparsers, parent: argparse.ArgumentParser) -> None:
    """`status [--lock-timeout SECONDS] [--from-files]`."""
    status = common.add_command(
        sub, parent, "status", cmd_status, summary=_STATUS_SUMMARY, description=_STATUS_DESCRIPTION
    )
    wait = "wait this long for another process to let go of DuckDB, then read the files"
    status.add_argument(
        "--lock-timeout",
        type=float,
        default=_STATUS_LOCK_TIMEOUT_SECONDS,
        metavar="SECONDS",
        help=f"{wait} (default {_STATUS_LOCK_TIMEOUT_SECONDS:g})",
    )
    status.add_argument(
        "--from-files",
        action="store_true",
        help="read every status file, not DuckDB (slow at scale: 834 s at 1,000,000)",
    )


def cmd_status(args: argparse.Namespace) -> int:
    """Print the tasks per status label and executor (`count_statuses`: exact, from DuckDB and
    the status files it lags behind), or what there is before any run; notes go to stderr."""
    layout = common.layout(args)
    if not layout.status_dir.is_dir():
        common.say_error(f"no status folder at {layout.status_dir}")
        return 2  # nothing could be read (the exit codes in `scrapeflow --help`)
    counts = count_statuses(
        layout, lock_timeout_seconds=args.lock_timeout, from_files=args.from_files
    )
    for note in counts.notes:
        print(f"({note})", file=sys.stderr)
    if counts.counts:
        print(status_table(counts))
        return 0
    stored = counts.stored_tasks
    print(f"{common.plural(stored, 'task')} stored, none run yet" if stored else "no tasks yet")
    return 0


def status_table(counts: StatusCounts) -> str:
    """The counts laid out as pandas prints scrapeflow's `status_summary` frame (what this
    command printed before): labels left, one right-aligned column per executor."""
    # Laid out here rather than by pandas: importing it costs ~0.2 s and ~40 MiB.
    labels = counts.labels
    first = max(len("status"), *(len(label) for label in labels))
    columns = []  # (executor, width, a cell per label)
    for executor, found in counts.counts.items():
        cells = [str(found.get(label, 0)) for label in labels]
        columns.append((executor, max(len(executor), *map(len, cells)), cells))
    lines = [" " * first + "".join(f"  {name.rjust(width)}" for name, width, _ in columns)]
    lines.append("status".ljust(first) + "".join("  " + " " * width for _, width, _ in columns))
    for row, label in enumerate(labels):
        line = "".join(f"  {cells[row].rjust(width)}" for _, width, cells in columns)
        lines.append(label.ljust(first) + line)
    return "\n".join(lines)


def add_parsers(actions: common.Subparsers, parent: argparse.ArgumentParser) -> None:
    """`tasks list`, `tasks show KEY`, `tasks find TEXT`."""
    listing = common.add_command(actions, parent, "list", cmd_tasks_list, summary=_LIST_SUMMARY)
    listing.add_argument("--limit", type=int, metavar="N", help="the first N tasks by key")
    show = common.add_command(actions, parent, "show", cmd_tasks_show, summary=_SHOW_SUMMARY)
    show.add_argument("key", metavar="KEY")
    find = common.add_command(actions, parent, "find", cmd_tasks_find, summary=_FIND_SUMMARY)
    find.add_argument("text", metavar="URL_OR_SUBSTRING")


def cmd_tasks_list(args: argparse.Namespace) -> int:
    """Print key, each executor's outcome and URL of every task (the first `--limit` by key)."""
    if args.limit is not None and args.limit < 0:
        raise common.UsageError(f"--limit must be 0 or more, got {args.limit}")
    status_dir = common.layout(args).status_dir
    keys = _stored_keys(status_dir)
    shown = keys if args.limit is None else keys[: args.limit]
    statuses: list[tuple[str, dict[str, Any]]] = []
    for key in shown:
        try:
            status = load_status(status_dir, key)
        except StatusFileError as exc:
            print(f"unreadable: {exc}", file=sys.stderr)
            continue
        if status is not None:
            statuses.append((key, status))
    if not statuses:
        print("no tasks yet")
        return 0
    executors = list(dict.fromkeys(n for _, s in statuses for n in schema.executor_names(s)))
    rows = [["KEY", *(name.upper() for name in executors), "URL"]]
    for key, status in statuses:
        outcomes = [_outcome(status, name) for name in executors]
        rows.append([key, *outcomes, redact(str(status["params"].get("url", "")))])
    print("\n".join(common.aligned(rows)))
    if len(shown) < len(keys):
        print(f"({len(shown)} of {len(keys)} tasks shown)", file=sys.stderr)
    return 0


def cmd_tasks_show(args: argparse.Namespace) -> int:
    """Print a task's params and, per executor, its last outcome, times, counts and output."""
    status_dir = common.layout(args).status_dir
    key = validate_key(args.key)
    status = load_status(status_dir, key) if status_dir.is_dir() else None
    if status is None:
        raise common.UsageError(f"no task {key!r}: no status file {status_path(status_dir, key)}")
    print(key)
    # Shown without credentials (terminals end up in logs); the status file has them.
    params = redact_params(status["params"])
    print(f"  params: {orjson.dumps(params, option=orjson.OPT_SORT_KEYS).decode()}")
    names = schema.executor_names(status)
    if not names:
        print("  no executor has run yet")
    for name in names:
        print(f"  {name}: {status[schema.fields_of(name).status]}")
        for line in _step_details(status, name):
            print(f"    {line}")
    return 0


def cmd_tasks_find(args: argparse.Namespace) -> int:
    """Print `key  url` of each task whose URL contains the text (DuckDB's `tasks` table when
    there is one, else the status files); exit 1 when none does."""
    layout = common.layout(args)
    found = _find_in_duckdb(layout.db_path, args.text) if layout.db_path.is_file() else None
    if found is None:
        found = _find_in_status_files(layout.status_dir, args.text)
    if not found:
        print(f"no task URL contains {args.text!r}", file=sys.stderr)
        return 1
    print("\n".join(common.aligned([["KEY", "URL"], *([k, u] for k, u in found)])))
    return 0


def _stored_keys(status_dir: Path) -> list[str]:

    if not status_dir.is_dir():
        return []
    return sorted(path.name[: -len(schema.STATUS_SUFFIX)] for path in iter_status_files(status_dir))


def _outcome(status: dict[str, Any], name: str) -> str:

    if not schema.has_run(status, name):
        return _NEVER_RAN
    if schema.is_error(status, name):
        error_class, _ = schema.error_parts(status, name)
        return f"ERROR {error_class or ''}".strip()
    return str(status[schema.fields_of(name).status])


def _step_details(status: dict[str, Any], name: str) -> list[str]:

    facts = {
        "started": schema.started(status, name),
        "last run": schema.last_run(status, name),
        "attempts": schema.attempts(status, name),
        "http status": schema.http_status_of(status, name),
        "size": schema.size_of(status, name),
        "md5": schema.md5_of(status, name),
        "error kind": schema.error_kind(status, name),
        "failed runs in a row": schema.failures(status, name) or None,
        "proxy": schema.proxy_of(status, name),
    }
    lines = [", ".join(f"{label}: {value}" for label, value in facts.items() if value is not None)]
    output = schema.output_of(status, name)
    if output:
        text = orjson.dumps(output, option=orjson.OPT_SORT_KEYS).decode()
        cut = text if len(text) <= _OUTPUT_CHARS else text[: _OUTPUT_CHARS - 3] + "..."
        lines.append(f"output: {cut}")
    return [line for line in lines if line]


def _find_in_duckdb(db_path: Path, text: str) -> list[tuple[str, str]] | None:
    """Matches from DuckDB's `tasks` table; None when DuckDB is busy (use the status files)."""
    try:
        conn = connect_readonly(db_path, lock_timeout_seconds=_FIND_LOCK_TIMEOUT_SECONDS)
    except (LedgerLockedError, duckdb.Error) as exc:  # held, or broken: the files still answer
        print(f"({exc}; searching the status files)", file=sys.stderr)
        return None
    try:
        rows = conn.execute(
            "SELECT key, url FROM tasks WHERE contains(url, ?) ORDER BY key", [text]
        ).fetchall()
    finally:
        conn.close()
    return [(str(key), str(url)) for key, url in rows]


def _find_in_status_files(status_dir: Path, text: str) -> list[tuple[str, str]]:

    if not status_dir.is_dir():
        return []
    found = [
        (key, redact(str(status["params"].get("url", ""))))
        for key, status in iter_statuses(status_dir)
        if text in str(status["params"].get("url", ""))
    ]
    return sorted(found)
