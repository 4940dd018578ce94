"""`scrapeflow db sync | rebuild | summary | prune`: keep DuckDB in step with the spool and the
status files, print the summary queries, and trim the history it keeps for good.

DuckDB admits one process at a time: when another holds the file past `--lock-timeout`, the
command names the file and that process and exits 2 rather than wait on.
"""

import argparse
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from scrapeflow_dagster.cli import common, progress
from scrapeflow_dagster.engine.history import (
    LedgerLockedError,
    RebuildResult,
    SyncResult,
    find_lock_holder,
    rebuild_from_status_dir,
    summary_text,
    sync_spool,
)
from scrapeflow_dagster.engine.history.database.prune import prune_history
from scrapeflow_dagster.engine.state.layout import DataLayout

SUMMARY = "DuckDB: sync | rebuild | summary | prune"
DESCRIPTION = (
    "sync: ingest the spool runs left; rebuild: make DuckDB agree with the status files; "
    "summary: sync, then print the summary queries; prune --older-than DURATION: delete the "
    "step history, changes and spool files' names older than that (each task's current state "
    "kept)."
)
LOCK_WAIT = common.LOCK_TIMEOUT_SECONDS


def add_parser(sub: common.Subparsers, parent: argparse.ArgumentParser) -> None:
    """`db sync | rebuild | summary | prune`."""
    db = common.add_command(sub, parent, "db", cmd_db, summary=SUMMARY, description=DESCRIPTION)
    db.add_argument("action", choices=["sync", "rebuild", "summary", "prune"])
    db.add_argument(
        "--older-than",
        metavar="DURATION",
        help="prune: the history older than this goes (30d, 12w, ...)",
    )
    db.add_argument("--dry-run", action="store_true", help="prune: count what would go, only")
    wait = f"wait this long for another process to let go of DuckDB (default {LOCK_WAIT:g})"
    db.add_argument("--lock-timeout", type=float, default=LOCK_WAIT, metavar="SECONDS", help=wait)


def cmd_db(args: argparse.Namespace) -> int:
    """Run the DuckDB action; exit 2 (naming the holder) when DuckDB stays held."""
    layout = common.layout(args).ensure()
    try:
        if args.action == "summary":
            print(summary_text(layout, lock_timeout_seconds=args.lock_timeout))
            return 0
        if args.action == "prune":
            print(prune(layout, args))
            return 0
        act = rebuild if args.action == "rebuild" else sync
        print(act(layout, lock_timeout_seconds=args.lock_timeout))
    except LedgerLockedError:
        raise LedgerLockedError(locked_message(layout.db_path, args.lock_timeout)) from None
    return 0


def prune(layout: DataLayout, args: argparse.Namespace) -> str:
    """Delete the history older than `--older-than` (synced first: rows still in the spool are
    never older than those in DuckDB); returns the summary line.

    Raises:
        UsageError: `--older-than` missing or no duration.
        LedgerLockedError: when another process held DuckDB for `--lock-timeout`.
    """
    if args.older_than is None:
        raise common.UsageError("db prune needs --older-than DURATION (e.g. 30d)")
    before = datetime.now(UTC).replace(tzinfo=None) - timedelta(
        seconds=common.parse_duration(args.older_than)
    )
    sync(layout, lock_timeout_seconds=args.lock_timeout)
    result = prune_history(
        layout.db_path, before=before, lock_timeout_seconds=args.lock_timeout, dry_run=args.dry_run
    )
    verb = "would delete" if result.dry_run else "deleted"
    return (
        f"{verb} {common.plural(result.step_runs, 'step run')}, "
        f"{common.plural(result.changes, 'change')} and "
        f"{common.plural(result.spool_files, 'spool file name')} older than "
        f"{before:%Y-%m-%d %H:%M} UTC from {layout.db_path}; each task's current state kept"
    )


def rebuild(layout: DataLayout, *, lock_timeout_seconds: float) -> str:
    """Rebuild DuckDB from the status files; returns the summary line (problems on stderr).

    Raises:
        LedgerLockedError: when another process held DuckDB for `lock_timeout_seconds`.
    """
    with progress.ticking(f"rebuilding {layout.db_path.name} from the status files"):
        result = rebuild_from_status_dir(
            layout.status_dir, layout.db_path, lock_timeout_seconds=lock_timeout_seconds
        )
    for path, message in result.errors:
        print(f"unreadable: {path}: {message}", file=sys.stderr)
    return rebuild_line(result, layout.db_path)


def sync(layout: DataLayout, *, lock_timeout_seconds: float) -> str:
    """Ingest the spool into DuckDB; returns the summary line (set-aside files on stderr).

    Raises:
        LedgerLockedError: when another process held DuckDB for `lock_timeout_seconds`.
    """
    result = sync_spool(layout.db_path, layout.spool_dir, lock_timeout_seconds=lock_timeout_seconds)
    if result.locked:
        raise LedgerLockedError(f"{layout.db_path} stayed locked")
    for path in result.bad_files:
        print(f"set aside (DuckDB cannot read it): {path}", file=sys.stderr)
    return sync_line(result, layout.db_path)


def locked_message(db_path: Path, waited_seconds: float) -> str:
    """Who holds `db_path`, after a wait of `waited_seconds` ran out."""
    holder = find_lock_holder(db_path) or "another process (it let go just now: run it again)"
    return (
        f"DuckDB file {db_path} is held by {holder}; gave up after {waited_seconds:g} s. "
        "Close that process (or wait for it to finish) and run the command again."
    )


def sync_line(result: SyncResult, db_path: Path) -> str:
    """A sync, in one line.

    `locked=False` stays at its end: scripts (and the reliability tests) look for it.
    """
    line = (
        f"synced {common.plural(result.ingested_rows, 'row')} from "
        f"{common.plural(result.ingested_files, 'spool file')} into {db_path}; "
        f"{result.pending_files} pending"
    )
    if result.bad_files:
        line += f", {len(result.bad_files)} set aside as unreadable"
    return f"{line} (locked={result.locked})"


def rebuild_line(result: RebuildResult, db_path: Path) -> str:
    """A rebuild, in one line."""
    line = (
        f"rebuilt {db_path} from {common.plural(result.files_read, 'status file')}: "
        f"{common.plural(result.tasks_upserted, 'task')} upserted, "
        f"{common.plural(result.step_rows_inserted, 'step run')} added where DuckDB disagreed"
    )
    if result.errors:
        line += f"; {common.plural(len(result.errors), 'file')} skipped (see stderr)"
    if result.set_aside is not None:
        line += (
            f"; the old file was not a DuckDB database: kept as {result.set_aside} (frontier "
            "and pages rows are only there)"
        )
    return line
