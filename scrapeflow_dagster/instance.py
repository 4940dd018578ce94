"""The Dagster home: SQLite under the project unless `DAGSTER_HOME` says otherwise, or Postgres
(`scrapeflow home init --postgres URL`)."""

import json
import os
from pathlib import Path
from urllib.parse import urlsplit

import dagster as dg

DEFAULT_HOME = ".dagster_home"
DEFAULT_MAX_CONCURRENT_RUNS = 4
POSTGRES_DRIVER_SCHEME = "postgresql+psycopg2"
# Schemes a user may give for the same server: SQLAlchemy's `postgresql` defaults to psycopg2.
PLAIN_POSTGRES_SCHEMES = ("postgresql", "postgres")

_DAGSTER_YAML = """# Written by scrapeflow: embedded defaults (SQLite storage in this folder).
telemetry:
  enabled: false
run_queue:
  max_concurrent_runs: {max_concurrent_runs}
# Asset events written in batches (one transaction per 1,000), the rest as stock SQLite does;
# runs and schedules keep Dagster's default SQLite storage in this folder.
event_log_storage:
  module: scrapeflow_dagster.storage.sqlite.event_log
  class: BatchedSqliteEventLogStorage
  config:
    base_dir: {runs_dir}
"""

_POSTGRES_YAML = """# Written by scrapeflow: Postgres storage for runs, events and schedules.
telemetry:
  enabled: false
# Dagster's default QueuedRunCoordinator: runs launched by the UI, sensors and backfills wait
# in a queue and the daemon starts this many at a time.
run_queue:
  max_concurrent_runs: {max_concurrent_runs}
run_storage:
  module: dagster_postgres.run_storage
  class: PostgresRunStorage
  config:
    postgres_url: {url}
# Asset events written in batches (one transaction per 1,000) on pooled connections, the rest
# one transaction per event; read exactly as stock dagster-postgres reads them.
event_log_storage:
  module: scrapeflow_dagster.storage.postgres.event_log
  class: BatchedPostgresEventLogStorage
  config:
    postgres_url: {url}
schedule_storage:
  module: dagster_postgres.schedule_storage
  class: PostgresScheduleStorage
  config:
    postgres_url: {url}
"""


class PostgresUrlError(ValueError):
    """The URL given for the Postgres home is not a PostgreSQL URL."""


def postgres_url(url: str) -> tuple[str, bool]:
    """`url` as the `postgresql+psycopg2://` URL Dagster's storages take, and whether it changed.

    Raises:
        PostgresUrlError: naming the URL (without its password) when it is not PostgreSQL.
    """
    parts = urlsplit(url)
    # Never the password: whatever precedes the last `@` (a URL without `//` included).
    shown = parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]).geturl() if parts.netloc else ""
    shown = shown or url.rpartition("@")[2]
    expected = "expected postgresql+psycopg2://user@host:5432/db"
    scheme_ok = parts.scheme in (POSTGRES_DRIVER_SCHEME, *PLAIN_POSTGRES_SCHEMES)
    if not (scheme_ok and parts.netloc):
        raise PostgresUrlError(f"not a PostgreSQL URL: {shown!r} ({expected})")
    try:
        parts.port  # noqa: B018  (urllib checks the port when it is read)
    except ValueError:
        raise PostgresUrlError(f"the port of {shown!r} is not a number ({expected})") from None
    if not parts.hostname:
        raise PostgresUrlError(f"no host in {shown!r} ({expected})")
    if parts.scheme == POSTGRES_DRIVER_SCHEME:
        return url, False
    return f"{POSTGRES_DRIVER_SCHEME}://{url.split('://', 1)[1]}", True


def dagster_yaml(
    home: Path,
    *,
    postgres: str | None = None,
    max_concurrent_runs: int = DEFAULT_MAX_CONCURRENT_RUNS,
) -> str:
    """The home's dagster.yaml: embedded SQLite in `home`, or Postgres at `postgres`.

    Args:
        home: the Dagster home folder.
        postgres: a `postgresql+psycopg2://` URL (see `postgres_url`); None for SQLite.
        max_concurrent_runs: how many queued runs the daemon runs at a time.
    """
    if postgres is not None:
        # JSON quoting is YAML quoting: a URL with any character stays one string.
        return _POSTGRES_YAML.format(
            url=json.dumps(postgres), max_concurrent_runs=max_concurrent_runs
        )
    return _DAGSTER_YAML.format(
        runs_dir=(home / "history" / "runs").resolve(), max_concurrent_runs=max_concurrent_runs
    )


def ensure_dagster_home(default: str = DEFAULT_HOME) -> Path:
    """Set `DAGSTER_HOME` to `./.dagster_home` when unset, creating it with a dagster.yaml."""
    home = Path(os.environ.get("DAGSTER_HOME") or default).resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(dagster_yaml(home))
    os.environ["DAGSTER_HOME"] = str(home)
    return home


class HomeConflictError(FileExistsError):
    """The Dagster home already has a different dagster.yaml."""


def init_dagster_home(
    *,
    force: bool = False,
    default: str = DEFAULT_HOME,
    postgres: str | None = None,
    max_concurrent_runs: int = DEFAULT_MAX_CONCURRENT_RUNS,
) -> Path:
    """Write `$DAGSTER_HOME/dagster.yaml` and return the home.

    Args:
        force: replace a dagster.yaml with other content.
        default: the home when `DAGSTER_HOME` is unset.
        postgres: a `postgresql+psycopg2://` URL for runs, events and schedules (None: SQLite).
        max_concurrent_runs: how many queued runs the daemon runs at a time.

    Raises:
        HomeConflictError: naming the file when it exists with other content and not `force`.
    """
    home = Path(os.environ.get("DAGSTER_HOME") or default).resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    wanted = dagster_yaml(home, postgres=postgres, max_concurrent_runs=max_concurrent_runs)
    if config.exists() and config.read_text() != wanted and not force:
        raise HomeConflictError(f"{config} exists with other settings (use --force to replace)")
    config.write_text(wanted)
    if postgres is not None and urlsplit(postgres).password:
        config.chmod(0o600)  # it holds the database password: readable by its owner only
    return home


def get_instance() -> dg.DagsterInstance:
    """The Dagster instance of `DAGSTER_HOME` (the embedded default when unset)."""
    ensure_dagster_home()
    return dg.DagsterInstance.get()
