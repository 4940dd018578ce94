"""`scrapeflow home init`: the Dagster home's dagster.yaml (embedded SQLite storage)."""

import argparse

from scrapeflow_dagster.cli import common


def add_parser(sub: common.Subparsers, parent: argparse.ArgumentParser) -> None:
    """`home init [--force]`."""
    home = sub.add_parser("home", help="the Dagster home")
    actions = home.add_subparsers(dest="action", required=True, metavar="ACTION")
    init = actions.add_parser(
        "init",
        help="write $DAGSTER_HOME/dagster.yaml (default ./.dagster_home): SQLite storage",
    )
    init.add_argument("--force", action="store_true", help="replace a different dagster.yaml")
    init.set_defaults(func=cmd_home_init)


def cmd_home_init(args: argparse.Namespace) -> int:
    """Write the Dagster home's dagster.yaml and say how to use it; 1 when another is there."""
    from scrapeflow_dagster.instance import HomeConflictError, init_dagster_home

    try:
        home = init_dagster_home(force=args.force)
    except HomeConflictError as exc:
        common.say_error(exc)
        return 1
    print(f"Dagster home ready: {home / 'dagster.yaml'}")
    print(f"export DAGSTER_HOME={home}")
    return 0
