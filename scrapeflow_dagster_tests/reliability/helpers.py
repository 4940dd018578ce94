"""Plain helpers of the reliability tier alone: the `scrapeflow` command, status files and blobs
checked whole, failures read back, async fakes beside synchronous Dagster code.

Fixtures live in conftest.py; what other tiers use too lives in `scrapeflow_dagster_tests.support`.
"""

import asyncio
import hashlib
import os
import subprocess
import threading
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import dagster as dg

from scrapeflow_dagster.engine.status import STATUS_SUFFIX, StatusData, parse_status_bytes
from scrapeflow_dagster_tests.support.partitions import range_tags
from scrapeflow_dagster_tests.support.paths import PYTHON
from scrapeflow_dagster_tests.support.runs import run_assets, run_resources

_T = TypeVar("_T")


def scrapeflow(
    args: Sequence[str], env: Mapping[str, str], *, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run the `scrapeflow` command (as `python -m scrapeflow_dagster.cli`)."""
    return subprocess.run(
        [PYTHON, "-m", "scrapeflow_dagster.cli", *args],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def read_all_statuses(status_dir: Path) -> dict[str, StatusData]:
    """Parse every `*.status.json` in `status_dir`; any unreadable file fails the test."""
    statuses: dict[str, StatusData] = {}
    for entry in os.scandir(status_dir):
        if entry.name.endswith(STATUS_SUFFIX) and not entry.name.startswith("."):
            path = Path(entry.path)
            statuses[entry.name[: -len(STATUS_SUFFIX)]] = parse_status_bytes(
                path.read_bytes(), path
            )
    return statuses


def assert_success_blobs_match(status_dir: Path, statuses: Mapping[str, StatusData]) -> int:
    """Every scrape SUCCESS has `<key>.scrape` whose md5 and size are the recorded ones."""
    checked = 0
    for key, status in statuses.items():
        if status.get("scrape_status") != "SUCCESS":
            continue
        blob = status_dir / f"{key}.scrape"
        assert blob.is_file(), f"{key}: SUCCESS without {blob.name}"
        data = blob.read_bytes()
        assert hashlib.md5(data).hexdigest() == status["scrape"]["content"], key
        assert len(data) == status["scrape"]["size"], key
        checked += 1
    return checked


def error_class(status_string: str) -> str:
    """`HttpStatusError` of `ERROR HttpStatusError::HTTP response 404`."""
    assert status_string.startswith("ERROR "), status_string
    return status_string[len("ERROR ") :].split("::", 1)[0]


class BackgroundLoop:
    """An asyncio loop in a daemon thread, for async fakes next to synchronous Dagster code."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self) -> "BackgroundLoop":
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()

    def run(self, coro: Coroutine[Any, Any, _T], timeout: float = 30) -> _T:
        """Run `coro` on the loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)


def assert_failed_only_through_tasks(result: dg.ExecuteInProcessResult, failed: int) -> None:
    """The run failed, and only as the step's own `dg.Failure` counting its failed `scrape`
    tasks."""
    assert not result.success
    failures = result.get_step_failure_events()
    assert len(failures) == 1
    error = failures[0].step_failure_data.error
    assert error is not None
    assert error.cls_name == "Failure", error.to_string()
    assert f"Failure: scrape: {failed} of " in error.message, error.message


def snapshot_files(folder: Path) -> dict[str, bytes]:
    """Name -> bytes of every regular file directly in `folder` (hidden ones left out)."""
    return {
        p.name: p.read_bytes()
        for p in sorted(folder.iterdir())
        if p.is_file() and not p.name.startswith(".")
    }


def scrape_range(
    instance: dg.DagsterInstance, data_dir: Path, first: str, last: str, **settings: Any
) -> dg.ExecuteInProcessResult:
    """An in-process `scrape` run over `first...last` with default resources."""
    resources = run_resources(data_dir, **settings)
    return run_assets(instance, resources, ["scrape"], range_tags(first, last))
