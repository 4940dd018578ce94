"""The `scrapeflow` command: add tasks, show status, keep DuckDB in step, serve the test site."""

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from scrapeflow_dagster.engine.state.layout import DataLayout


def _layout(args: argparse.Namespace) -> DataLayout:
    return DataLayout(Path(args.data_dir).resolve()) if args.data_dir else DataLayout.from_env()


def cmd_tasks_add(args: argparse.Namespace) -> int:
    """Store the params of every valid line, then add the keys as `tasks` partitions."""
    from scrapeflow_dagster.defs.partitions import add_task_partitions
    from scrapeflow_dagster.engine.history import Ledger
    from scrapeflow_dagster.engine.tasks.adding import add_tasks
    from scrapeflow_dagster.engine.tasks.intake import read_task_file
    from scrapeflow_dagster.instance import get_instance

    layout = _layout(args).ensure()
    instance = get_instance()
    refused = 0
    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        for name in args.files:
            report = add_tasks(layout, read_task_file(Path(name)), ledger=ledger)
            added = add_task_partitions(instance, report.keys)
            for error in report.errors:
                print(f"refused: {error}", file=sys.stderr)
            refused += len(report.errors)
            print(
                f"{name}: {len(report.keys)} valid tasks ({report.new} new params, "
                f"{added} new partitions), {len(report.errors)} lines refused"
            )
    return 1 if refused else 0


def cmd_status(args: argparse.Namespace) -> int:
    """Print scrapeflow's status summary (status strings x executors)."""
    from scrapeflow_dagster.engine.status import status_summary

    layout = _layout(args)
    if not layout.status_dir.is_dir():
        print(f"no status folder at {layout.status_dir}", file=sys.stderr)
        return 1
    summary = status_summary(layout.status_dir)
    print(summary.to_string() if not summary.empty else "no tasks yet")
    return 0


def cmd_db(args: argparse.Namespace) -> int:
    """DuckDB upkeep: sync the spool, rebuild from status files, or print the summary."""
    from scrapeflow_dagster.engine import history as ledger_module
    from scrapeflow_dagster.engine.history import summary_text

    layout = _layout(args).ensure()
    if args.action == "rebuild":
        result = ledger_module.rebuild_from_status_dir(layout.status_dir, layout.db_path)
        print(result)
        for path, message in getattr(result, "errors", []):
            print(f"unreadable: {path}: {message}", file=sys.stderr)
    elif args.action == "sync":
        with ledger_module.Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
            print(ledger.sync())
    else:
        print(summary_text(layout))
    return 0


def cmd_home_init(args: argparse.Namespace) -> int:
    """Write the Dagster home's dagster.yaml (embedded SQLite) and say how to use it."""
    from scrapeflow_dagster.instance import HomeConflictError, init_dagster_home

    try:
        home = init_dagster_home(force=args.force)
    except HomeConflictError as exc:
        print(f"scrapeflow: {exc}", file=sys.stderr)
        return 1
    print(f"Dagster home ready: {home / 'dagster.yaml'}")
    print(f"export DAGSTER_HOME={home}")
    return 0


def cmd_site(args: argparse.Namespace) -> int:
    """Serve the bundled local site until interrupted (127.0.0.1 only)."""
    from scrapeflow_dagster.site.server import run_site_forever

    run_site_forever(
        "127.0.0.1", args.port, pages=args.pages, on_ready=lambda url: print(f"serving {url}")
    )
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """The main job: scrape the bundled site through Dagster and print the DuckDB summary."""
    from scrapeflow_dagster.demo import run_demo

    return run_demo(pages=args.pages, port=args.port)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `scrapeflow`."""
    parser = argparse.ArgumentParser(prog="scrapeflow", description=__doc__)
    parser.add_argument("--data-dir", help="data folder (default $SCRAPEFLOW_DATA_DIR or data/)")
    sub = parser.add_subparsers(dest="command", required=True)

    tasks = sub.add_parser("tasks", help="manage tasks").add_subparsers(
        dest="action", required=True
    )
    add = tasks.add_parser("add", help="add tasks from .txt/.csv/.jsonl files")
    add.add_argument("files", nargs="+")
    add.set_defaults(func=cmd_tasks_add)

    sub.add_parser("status", help="print the status summary").set_defaults(func=cmd_status)

    db = sub.add_parser("db", help="DuckDB: sync | rebuild | summary")
    db.add_argument("action", choices=["sync", "rebuild", "summary"])
    db.set_defaults(func=cmd_db)

    home = sub.add_parser("home", help="the Dagster home").add_subparsers(
        dest="action", required=True
    )
    init = home.add_parser(
        "init", help="write $DAGSTER_HOME/dagster.yaml (default ./.dagster_home): SQLite storage"
    )
    init.add_argument("--force", action="store_true", help="replace a different dagster.yaml")
    init.set_defaults(func=cmd_home_init)

    site = sub.add_parser("site", help="serve the bundled local test site")
    site.add_argument("--port", type=int, default=8765)
    site.add_argument("--pages", type=int, default=1000)
    site.set_defaults(func=cmd_site)

    demo = sub.add_parser("demo", help="scrape the bundled site through Dagster")
    demo.add_argument("--pages", type=int, default=300)
    demo.add_argument("--port", type=int, default=8765)
    demo.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `scrapeflow` console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (OSError, ValueError) as exc:
        print(f"scrapeflow: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
