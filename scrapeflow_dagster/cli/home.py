"""`scrapeflow home init`: the Dagster home's dagster.yaml (embedded SQLite, or Postgres)."""

import argparse

from scrapeflow_dagster.cli import common


def _positive(text: str) -> int:
    value = int(text) if text.strip().lstrip("-").isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"--max-concurrent-runs {text!r}: expected a number >= 1")
    return value


def add_parser(sub: common.Subparsers, parent: argparse.ArgumentParser) -> None:
    """`home init [--postgres URL] [--max-concurrent-runs N] [--force]`."""
    home = sub.add_parser("home", help="the Dagster home")
    actions = home.add_subparsers(dest="action", required=True, metavar="ACTION")
    init = actions.add_parser(
        "init",
        help="write $DAGSTER_HOME/dagster.yaml (default ./.dagster_home): SQLite storage, or"
        " Postgres with --postgres",
    )
    init.add_argument(
        "--postgres",
        metavar="URL",
        help="Postgres for runs, events and schedules, e.g."
        " postgresql+psycopg2://user:password@host:5432/dagster (postgresql:// is converted)",
    )
    init.add_argument(
        "--max-concurrent-runs",
        type=_positive,
        default=4,
        metavar="N",
        help="runs the daemon starts at a time from the queue (default 4)",
    )
    init.add_argument("--force", action="store_true", help="replace a different dagster.yaml")
    init.set_defaults(func=cmd_home_init)


def cmd_home_init(args: argparse.Namespace) -> int:
    """Write the Dagster home's dagster.yaml and say how to use it; 1 when another is there."""
    from scrapeflow_dagster.instance import (
        HomeConflictError,
        PostgresUrlError,
        init_dagster_home,
        postgres_url,
    )

    url = None
    if args.postgres is not None:
        try:
            url, converted = postgres_url(args.postgres)
        except PostgresUrlError as exc:
            raise common.UsageError(f"--postgres: {exc}") from exc
        if converted:
            print("--postgres: using the postgresql+psycopg2:// form Dagster's storages take")
    try:
        home = init_dagster_home(
            force=args.force, postgres=url, max_concurrent_runs=args.max_concurrent_runs
        )
    except HomeConflictError as exc:
        common.say_error(exc)
        return 1
    storage = "Postgres (runs, events, schedules)" if url else "embedded SQLite"
    print(f"Dagster home ready ({storage}): {home / 'dagster.yaml'}")
    print(f"export DAGSTER_HOME={home}")
    return 0
