"""Temp Dagster homes with the stock or the batched event log (SQLite, or Postgres given a
database URL), and the real CLI run on them."""

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from scrapeflow_dagster.instance import dagster_yaml
from scrapeflow_dagster_tests.storage.partitioned_defs import keys_partitions_def

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFS_MODULE = "scrapeflow_dagster_tests.storage.partitioned_defs"
CLI_TIMEOUT_SECONDS = 300.0
# `make compat` runs the storage tests on the newest Dagster patch, for which dagster-postgres
# (the [postgres] extra, pinned to one Dagster version) may have no release: Postgres is left out.
HAS_POSTGRES_EXTRA = importlib.util.find_spec("dagster_postgres") is not None
NO_POSTGRES_EXTRA = (
    f"dagster-postgres is not installed (the [postgres] extra; no release for dagster"
    f" {dg.__version__} on the index?): the Postgres storage is not checked"
)

STOCK_YAML = "telemetry:\n  enabled: false\n"
BATCHED_YAML = """event_log_storage:
  module: scrapeflow_dagster.storage.sqlite.event_log
  class: BatchedSqliteEventLogStorage
  config:
    base_dir: {base_dir}
"""
# Stock dagster-postgres for runs, events and schedules.
STOCK_POSTGRES_YAML = (
    STOCK_YAML
    + """storage:
  postgres:
    postgres_url: {url}
"""
)
BATCHED_POSTGRES_MARK = "class: BatchedPostgresEventLogStorage\n  config:\n"


def require_postgres_extra() -> None:
    """Skip the test, saying why, without dagster-postgres."""
    if not HAS_POSTGRES_EXTRA:
        pytest.skip(NO_POSTGRES_EXTRA)


def write_home(
    home: Path,
    *,
    batched: bool,
    options: dict[str, Any] | None = None,
    postgres_url: str | None = None,
) -> Path:
    """A fresh Dagster home at `home` with stock storage or the batched event log.

    Args:
        home: the folder (created).
        batched: configure the batched event log storage (SQLite, or Postgres with a URL).
        options: more keys of the batched storage's config (`max_buffered_events`, ...).
        postgres_url: Postgres for runs, events and schedules (an empty database) instead of
            SQLite files in `home`; the batched home is the one `scrapeflow home init` writes.
    """
    home.mkdir(parents=True)
    extra = "".join(f"    {name}: {value}\n" for name, value in (options or {}).items())
    if postgres_url is None and not batched:
        text = STOCK_YAML
    elif postgres_url is None:
        text = STOCK_YAML + BATCHED_YAML.format(base_dir=home / "history" / "runs") + extra
    elif not batched:
        text = STOCK_POSTGRES_YAML.format(url=postgres_url)
    else:
        text = dagster_yaml(home, postgres=postgres_url)
        assert BATCHED_POSTGRES_MARK in text
        text = text.replace(BATCHED_POSTGRES_MARK, BATCHED_POSTGRES_MARK + extra)
    (home / "dagster.yaml").write_text(text)
    return home


@contextmanager
def instance_of(home: Path) -> Iterator[dg.DagsterInstance]:
    """`DagsterInstance.get()` with `DAGSTER_HOME` set to `home`, disposed afterwards."""
    previous = os.environ.get("DAGSTER_HOME")
    os.environ["DAGSTER_HOME"] = str(home)
    try:
        with dg.DagsterInstance.get() as instance:
            yield instance
    finally:
        if previous is None:
            del os.environ["DAGSTER_HOME"]
        else:
            os.environ["DAGSTER_HOME"] = previous


def add_partitions(home: Path, keys: Sequence[str]) -> None:
    with instance_of(home) as instance:
        instance.add_dynamic_partitions(keys_partitions_def.name or "", list(keys))


def process_env(home: Path) -> dict[str, str]:
    """The environment of a CLI process on `home`: no inherited Dagster settings, fixed hashes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DAGSTER_")}
    env["DAGSTER_HOME"] = str(home)
    # Dagster orders a run's partitions by iterating sets: a fixed seed gives two homes the
    # same order of events, hence the same event ids.
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


def materialize_command(
    asset: str, first: str, last: str, config: dict[str, Any] | None = None
) -> list[str]:
    """`python -m dagster asset materialize` of `asset` over `first...last`."""
    command = [sys.executable, "-m", "dagster", "asset", "materialize", "-m", DEFS_MODULE]
    command += ["--select", asset, "--partition-range", f"{first}...{last}"]
    if config:
        command += ["--config-json", json.dumps({"ops": {asset: {"config": config}}})]
    return command


def materialize(
    home: Path, asset: str, first: str, last: str, config: dict[str, Any] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the real CLI to materialise `asset` over `first...last` on `home`."""
    return subprocess.run(
        materialize_command(asset, first, last, config),
        cwd=home,
        env=process_env(home),
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_SECONDS,
    )
