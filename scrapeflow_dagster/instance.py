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
"""


def ensure_dagster_home(default: str = DEFAULT_HOME) -> Path:
    """Set `DAGSTER_HOME` to `./.dagster_home` when unset, creating it with a dagster.yaml."""
    home = Path(os.environ.get("DAGSTER_HOME") or default).resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(_DAGSTER_YAML)
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
    if config.exists() and config.read_text() != _DAGSTER_YAML and not force:
        raise HomeConflictError(f"{config} exists with other settings (use --force to replace)")
    config.write_text(_DAGSTER_YAML)
    return home


def get_instance() -> dg.DagsterInstance:
    """The Dagster instance of `DAGSTER_HOME` (the embedded default when unset)."""
    ensure_dagster_home()
    return dg.DagsterInstance.get()
