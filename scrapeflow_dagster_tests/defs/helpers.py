"""Plain helpers of the Dagster-layer tests (fixtures live in conftest.py)."""

import os
import socket
import sys
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

import dagster as dg

from scrapeflow_dagster.defs.partitions import tasks_partitions_def
from scrapeflow_dagster.defs.run_requests import RANGE_END_TAG, RANGE_START_TAG
from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.state.layout import DATA_DIR_ENV, DataLayout
from scrapeflow_dagster.engine.tasks.adding import add_tasks
from scrapeflow_dagster.engine.tasks.intake import TaskSpec, build_task

REPO_ROOT = Path(__file__).resolve().parents[2]
BIN_DIR = Path(sys.executable).parent
SITE_PAGES = 200
SITE_PAGE_BYTES = 2000

Status = dg.AssetPartitionStatus
TaskRows = Sequence[tuple[str, str]]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def post(url: str) -> bytes:
    """POST with an empty body (the site's control routes)."""
    request = urllib.request.Request(url, data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=5) as response:
        return bytes(response.read())


def range_tags(first: str, last: str) -> dict[str, str]:
    """The tags of a run over partitions `first...last`."""
    return {RANGE_START_TAG: first, RANGE_END_TAG: last}


def statuses(
    instance: dg.DagsterInstance, asset: str, keys: Sequence[str]
) -> dict[str, Status | None]:
    """Dagster's status of each of `keys` for `asset` (None: missing)."""
    found = (
        instance.get_status_by_partition(dg.AssetKey(asset), list(keys), tasks_partitions_def)
        or {}  # None for an asset that never ran
    )
    return {key: found.get(key) for key in keys}


def keys_with(found: Mapping[str, Status | None], status: Status | None) -> set[str]:
    """The keys of `found` with `status`."""
    return {key for key, value in found.items() if value == status}


def store_tasks(layout: DataLayout, rows: TaskRows) -> list[str]:
    """Store `(key, url)` tasks through the engine's intake (status files, DuckDB spool)."""
    specs = [
        build_task({"key": key, "url": url}, Path("tests"), n) for n, (key, url) in enumerate(rows)
    ]
    assert all(isinstance(s, TaskSpec) for s in specs), specs
    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        report = add_tasks(layout, specs, ledger=ledger)
    assert not report.errors, report.errors
    return report.keys


def process_env(dagster_home: Path, data_dir: Path) -> dict[str, str]:
    """The environment of a `scrapeflow` / `dagster` process on temp homes."""
    env = dict(os.environ)
    env.update(
        {
            "DAGSTER_HOME": str(dagster_home),
            DATA_DIR_ENV: str(data_dir),
            "PYTHONUNBUFFERED": "1",
            "DAGSTER_DISABLE_TELEMETRY": "1",
        }
    )
    env.pop("SCRAPEFLOW_PROXY_KIND", None)
    return env
