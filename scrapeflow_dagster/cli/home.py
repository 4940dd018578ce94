"""Deployment commands: `scrapeflow home init` (the Dagster home's dagster.yaml: embedded SQLite,
or Postgres; with `--celery-broker` the broker recorded in the home, so every run against it
uses Celery workers, whatever folder it starts in; with `--retention` a retention block),
`scrapeflow home prune` (retention applied now: `storage/retention/prune.py`), `scrapeflow home
expand` (compact event bodies back to JSON: `storage/batches/bodies.py`) and `scrapeflow worker`
(a Celery worker for this code location)."""

import argparse
import os
from pathlib import Path
from urllib.parse import urlsplit

from scrapeflow_dagster.broker import (
    CELERY_BROKER_ENV,
    dagster_home,
    missing_extra,
    record_broker,
    recorded_broker,
)
from scrapeflow_dagster.cli import common
from scrapeflow_dagster.engine.redact import redact


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
    init.add_argument(
        "--celery-broker",
        metavar="URL",
        help="with --postgres: run steps (shards) on Celery workers through this Redis broker,"
        " e.g. redis://host:6379/0; recorded in the home ($DAGSTER_HOME/scrapeflow.json): every"
        " run against this home uses it, from any folder",
    )
    init.add_argument(
        "--retention",
        action="store_true",
        help="prune superseded asset events and old run logs (a `retention:` block with the"
        " defaults: docs/configuration.md)",
    )
    init.add_argument("--force", action="store_true", help="replace a different dagster.yaml")
    init.set_defaults(func=cmd_home_init)

    prune_parser = actions.add_parser(
        "prune",
        help="delete the asset events no read needs and old runs' logs, as the home's"
        " `retention:` block says (its defaults when it has none)",
    )
    prune_parser.add_argument(
        "--dry-run", action="store_true", help="count what would be deleted; delete nothing"
    )
    prune_parser.add_argument(
        "--vacuum",
        action="store_true",
        help="then rewrite the event log once to give the space back (SQLite VACUUM, which"
        " also lets later prunes shrink a home made before 0.2.0; Postgres VACUUM FULL): stop"
        " runs, the daemon and the webserver first",
    )
    prune_parser.set_defaults(func=cmd_home_prune)

    expand_parser = actions.add_parser(
        "expand",
        help="write the home's compact event bodies back as Dagster's JSON, for a home that"
        " will be read without scrapeflow (set lean_writes.compact_bodies: false first)",
    )
    expand_parser.set_defaults(func=cmd_home_expand)

    worker = sub.add_parser(
        "worker",
        parents=[parent],
        help="run a Celery worker that takes this code location's steps (shards) from the broker",
    )
    worker.add_argument(
        "--broker",
        metavar="URL",
        default=None,
        help=(
            "the Redis broker, e.g. redis://host:6379/0 (default $SCRAPEFLOW_CELERY_BROKER, "
            "else the one the Dagster home records: `home init --celery-broker`)"
        ),
    )
    worker.add_argument(
        "--concurrency",
        type=_positive_concurrency,
        default=os.cpu_count() or 1,
        metavar="N",
        help="steps run at once, one process each (default: the machine's cores)",
    )
    worker.add_argument("--name", help="the worker's node name, unique per broker")
    worker.add_argument("--loglevel", default="INFO", help="Celery's log level (default INFO)")
    worker.set_defaults(func=cmd_worker)


def _positive_concurrency(text: str) -> int:
    value = int(text) if text.strip().isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"--concurrency {text!r}: expected a number >= 1")
    return value


def cmd_worker(args: argparse.Namespace) -> int:
    """Run a Celery worker in the foreground (run it from the project folder, with
    `SCRAPEFLOW_DATA_DIR` on storage every worker mounts); returns its exit code."""
    if not args.broker:
        home = dagster_home()
        args.broker = os.environ.get(CELERY_BROKER_ENV) or (
            recorded_broker(home) if home is not None else None
        )
    if not args.broker:
        raise common.UsageError(
            "worker: no broker (--broker URL, $SCRAPEFLOW_CELERY_BROKER, or a Dagster home "
            "that records one)"
        )
    if not args.broker.startswith(("redis://", "rediss://")):
        raise common.UsageError(
            f"--broker {redact(args.broker)!r}: only Redis brokers (redis://HOST:PORT/DB)"
            " are supported"
        )
    problem = missing_extra("celery", "celery", "dagster_celery", "redis")
    if problem is not None:
        raise common.UsageError(f"worker: {problem}")
    from scrapeflow_dagster.scaleout.worker import run_worker

    # The worker's steps find the data folder (status files, shard reports) in the environment.
    os.environ["SCRAPEFLOW_DATA_DIR"] = str(common.layout(args).root)
    return run_worker(
        args.broker, concurrency=args.concurrency, name=args.name, loglevel=args.loglevel
    )


def cmd_home_init(args: argparse.Namespace) -> int:
    """Write the Dagster home's dagster.yaml and say how to use it; 1 when another is there."""
    from scrapeflow_dagster.instance import (
        HomeConflictError,
        PostgresUrlError,
        init_dagster_home,
        postgres_url,
    )

    url = None
    if args.celery_broker is not None:
        if args.postgres is None:
            raise common.UsageError(
                "--celery-broker: the Celery executor needs a Postgres home (add --postgres URL):"
                " workers on other machines share Dagster's storage"
            )
        if not args.celery_broker.startswith(("redis://", "rediss://")):
            raise common.UsageError(
                f"--celery-broker {redact(args.celery_broker)!r}: only Redis brokers"
                " (redis://HOST:PORT/DB) are supported"
            )
    problem = (
        missing_extra("celery", "dagster_celery", "redis", "dagster_postgres")
        if args.celery_broker is not None
        else missing_extra("postgres", "dagster_postgres", "psycopg2")
        if args.postgres is not None
        else None
    )
    if problem is not None:
        raise common.UsageError(problem)
    if args.postgres is not None:
        try:
            url, converted = postgres_url(args.postgres)
        except PostgresUrlError as exc:
            raise common.UsageError(f"--postgres: {exc}") from exc
        if converted:
            print("--postgres: using the postgresql+psycopg2:// form Dagster's storages take")
    try:
        if args.retention:
            home = _init_with_retention(args, url)
        else:
            home = init_dagster_home(
                force=args.force, postgres=url, max_concurrent_runs=args.max_concurrent_runs
            )
    except HomeConflictError as exc:
        common.say_error(exc)
        return 1
    storage = "Postgres (runs, events, schedules)" if url else "embedded SQLite"
    print(f"Dagster home ready ({storage}): {home / 'dagster.yaml'}")
    print(f"export DAGSTER_HOME={home}")
    record = record_broker(home, args.celery_broker)
    if args.celery_broker is not None:
        print(f"Celery executor: the broker is recorded in {record}: runs against this home")
        print("use Celery workers; start them with `scrapeflow worker` on every machine")
    if _from_dotenv(CELERY_BROKER_ENV) is not None:
        # Written there by earlier versions: it would send the steps of runs against any home
        # started in this folder to the broker.
        write_env_line(Path(".env"), CELERY_BROKER_ENV, None)
        print(f"{CELERY_BROKER_ENV} removed from {Path('.env').resolve()}: the home decides now")
    return 0


def _init_with_retention(args: argparse.Namespace, url: str | None) -> Path:
    """`init_dagster_home` with a `retention:` block of the defaults in the event log's config.

    Raises:
        HomeConflictError: naming the file when it exists with other content and not --force.
    """
    from scrapeflow_dagster.instance import DEFAULT_HOME, HomeConflictError, dagster_yaml
    from scrapeflow_dagster.storage.retention.prune import RetentionPolicy, retention_yaml

    home = Path(os.environ.get("DAGSTER_HOME") or DEFAULT_HOME).resolve()
    config = home / "dagster.yaml"
    plain = dagster_yaml(home, postgres=url, max_concurrent_runs=args.max_concurrent_runs)
    marker = "EventLogStorage\n  config:\n"
    wanted = plain.replace(marker, marker + retention_yaml(RetentionPolicy()), 1)
    if config.exists() and config.read_text() != wanted and not args.force:
        raise HomeConflictError(f"{config} exists with other settings (use --force to replace)")
    home.mkdir(parents=True, exist_ok=True)
    config.write_text(wanted)
    if url is not None and urlsplit(url).password:
        config.chmod(0o600)  # it holds the database password: readable by its owner only
    return home


def cmd_home_prune(args: argparse.Namespace) -> int:
    """Prune the home now (`storage/retention/prune.py`) and print what went; 1 when the storage
    is not one retention knows."""
    from scrapeflow_dagster.instance import get_instance
    from scrapeflow_dagster.storage.retention.prune import RetentionPolicy, prune

    with get_instance() as instance:
        storage = instance.event_log_storage
        policy = getattr(storage, "retention_policy", None)
        if policy is None:
            policy = RetentionPolicy()
            print(f"dagster.yaml has no retention block: using the defaults ({policy})")
        try:
            report = prune(storage, policy, dry_run=args.dry_run, vacuum_full=args.vacuum)
        except TypeError as exc:
            common.say_error(exc)
            return 1
    if report.skipped:
        print(f"nothing pruned: {report.skipped}")
        return 0
    verb = "would delete" if args.dry_run else "deleted"
    kinds = ", ".join(
        f"{count:,} {_KIND_NAMES.get(kind, kind)}"
        for kind, count in sorted(report.deleted_by_kind.items())
    )
    print(f"asset events {verb}: {kinds or 'none'}")
    print(f"run logs {verb}: {common.plural(report.run_logs_removed, 'run')}")
    print(f"event log: {report.bytes_before:,} bytes before, {report.bytes_after:,} after")
    if report.reindexed:
        print(f"indexes rebuilt: {', '.join(report.reindexed)}")
    return 0


def cmd_home_expand(args: argparse.Namespace) -> int:
    """Write compact event bodies back as JSON (`storage/batches/bodies.py`); 1 when the home's
    event log has no asset index this knows."""
    from scrapeflow_dagster.instance import get_instance
    from scrapeflow_dagster.storage.batches.bodies import expand_stored_bodies

    with get_instance() as instance:
        storage = instance.event_log_storage
        if not hasattr(storage, "index_connection"):
            common.say_error(f"{type(storage).__name__} is not a SQL event log storage")
            return 1
        count = expand_stored_bodies(storage)
    print(f"event bodies written back as JSON: {count:,}")
    return 0


_KIND_NAMES = {
    "ASSET_MATERIALIZATION": "materializations",
    "ASSET_OBSERVATION": "observations",
    "ASSET_MATERIALIZATION_PLANNED": "planned materializations",
}


def write_env_line(path: Path, name: str, value: str | None) -> Path:
    """Set `name=value` in the dotenv file `path`, keeping its other lines (None: remove the
    line); returns `path`."""
    lines = path.read_text().splitlines() if path.exists() else []
    kept = [line for line in lines if not line.strip().startswith(f"{name}=")]
    path.write_text("\n".join([*kept, *([f"{name}={value}"] if value else [])]) + "\n")
    return path


def _from_dotenv(name: str) -> str | None:
    """`name` from `./.env`, the file the `dagster` commands load from the project folder."""
    from dotenv import dotenv_values  # Dagster's own dependency, which reads the same file

    path = Path(".env")
    return dotenv_values(path).get(name) if path.is_file() else None
