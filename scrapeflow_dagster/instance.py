"""The embedded Dagster home: SQLite under the project unless `DAGSTER_HOME` says otherwise."""

import os
from pathlib import Path

import dagster as dg

DEFAULT_HOME = ".dagster_home"
_DAGSTER_YAML = """# Written by scrapeflow: embedded defaults (SQLite storage in this folder).
telemetry:
  enabled: false
run_queue:
  max_concurrent_runs: 4
# Asset events written in batches (one transaction per 1,000), the rest as stock SQLite does;
# runs and schedules keep Dagster's default SQLite storage in this folder.
event_log_storage:
  module: scrapeflow_dagster.storage.sqlite_batched
  class: BatchedSqliteEventLogStorage
  config:
    base_dir: {runs_dir}
"""


def dagster_yaml(home: Path) -> str:
    """The embedded home's dagster.yaml for `home` (SQLite, batched asset events)."""
    return _DAGSTER_YAML.format(runs_dir=(home / "history" / "runs").resolve())


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


def init_dagster_home(*, force: bool = False, default: str = DEFAULT_HOME) -> Path:
    """Write `$DAGSTER_HOME/dagster.yaml` (embedded SQLite storage) and return the home.

    Raises:
        HomeConflictError: naming the file when it exists with other content and not `force`.
    """
    home = Path(os.environ.get("DAGSTER_HOME") or default).resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    wanted = dagster_yaml(home)
    if config.exists() and config.read_text() != wanted and not force:
        raise HomeConflictError(f"{config} exists with other settings (use --force to replace)")
    config.write_text(wanted)
    return home


def get_instance() -> dg.DagsterInstance:
    """The Dagster instance of `DAGSTER_HOME` (the embedded default when unset)."""
    ensure_dagster_home()
    return dg.DagsterInstance.get()
