"""Plain helpers of the reliability tier: real processes, real files, DuckDB read-only views.

Fixtures live in conftest.py; these are the building blocks they and the tests share.
"""

import asyncio
import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Coroutine, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import dagster as dg
import duckdb

from scrapeflow_dagster.dagster_cli import materialize_range_command
from scrapeflow_dagster.defs.assets import executor_assets
from scrapeflow_dagster.defs.partitions import add_task_partitions, tasks_partitions_def
from scrapeflow_dagster.defs.resources import (
    ProxyProviderResource,
    ScrapeSettingsResource,
    StatusStoreResource,
    automation_settings_from_env,
)
from scrapeflow_dagster.defs.run_requests import RANGE_END_TAG, RANGE_START_TAG
from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.status import STATUS_SUFFIX, StatusData, parse_status_bytes
from scrapeflow_dagster.engine.tasks.adding import add_tasks
from scrapeflow_dagster.engine.tasks.intake import build_task
from scrapeflow_dagster.site.app import FaultRates

PYTHON = sys.executable
_T = TypeVar("_T")

# The site in its own process: the scraper under test never shares an event loop or a GIL with it.
# `latency` seconds are added to every answer (a real network's round trip), so that a scrape
# lasts long enough for a kill to land in it; with `stamp`, every page answer ends with its own
# serial number, so two fetches of one page never have the same bytes (or md5).
_SITE_SCRIPT = """
import asyncio
import itertools
import sys

from aiohttp import web

from scrapeflow_dagster.site import server
from scrapeflow_dagster.site.app import FaultRates, build_site

pages, page_bytes, latency = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
stamp, slow_seconds = sys.argv[4] == "1", float(sys.argv[5])
serials = itertools.count(1)


@web.middleware
async def shape(request, handler):
    if latency > 0:
        await asyncio.sleep(latency)
    response = await handler(request)
    if stamp and isinstance(response, web.Response) and isinstance(response.body, bytes):
        response.body = response.body + f"<!-- answer {next(serials)} -->\\n".encode()
    return response


def build_shaped_site(**options):
    app = build_site(**options)
    app.middlewares.append(shape)
    return app


server.build_site = build_shaped_site
server.run_site_forever(
    "127.0.0.1", 0, pages=pages, page_bytes=page_bytes,
    fault_rates=FaultRates(slow_seconds=slow_seconds),
    on_ready=lambda url: print(url, flush=True),
)
"""


@contextmanager
def site_process(
    *,
    pages: int,
    page_bytes: int,
    latency_seconds: float = 0.0,
    stamp: bool = False,
    slow_seconds: float = FaultRates().slow_seconds,
) -> Iterator[str]:
    """Run the bundled site with `run_site_forever` in a child process; yields its base URL.

    The `/mixed/{n}` pages have the default fault rates, with `slow_seconds` for slow answers.
    """
    args = [str(pages), str(page_bytes), str(latency_seconds), "1" if stamp else "0"]
    args.append(str(slow_seconds))
    proc = subprocess.Popen([PYTHON, "-c", _SITE_SCRIPT, *args], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), f"the site did not start: {url!r}"
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)  # run_site_forever stops cleanly on SIGTERM
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


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


def materialize_command(
    asset: str, first: str, last: str, *, config_json: str | None = None
) -> list[str]:
    """`python -m dagster asset materialize` of `asset` over partitions `first...last`."""
    return materialize_range_command(asset, first, last, config_json=config_json)


def wait_for_text(path: Path, text: str, proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait until `text` shows in the file `path` (True) or `proc` ends first (False)."""
    deadline = time.monotonic() + timeout
    needle = text.encode()
    while time.monotonic() < deadline:
        if needle in path.read_bytes():
            return True
        if proc.poll() is not None:
            return needle in path.read_bytes()
        time.sleep(0.05)
    raise AssertionError(f"{text!r} did not show in {path} within {timeout} s")


def kill_group(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL the process group of `proc` (started with `start_new_session=True`) and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


def range_tags(first: str, last: str) -> dict[str, str]:
    """The tags of a run over partitions `first...last`."""
    return {RANGE_START_TAG: first, RANGE_END_TAG: last}


def partition_statuses(
    instance: dg.DagsterInstance, asset: str, keys: Sequence[str]
) -> dict[str, dg.AssetPartitionStatus | None]:
    """Dagster's status of each of `keys` for `asset` (None: missing)."""
    found = instance.get_status_by_partition(dg.AssetKey(asset), list(keys), tasks_partitions_def)
    return {key: found.get(key) for key in keys}


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


def query(db_path: Path, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Rows of `sql` on the DuckDB file, opened read-only and closed at once."""
    conn = duckdb.connect(str(db_path), read_only=True)
    try:
        return conn.execute(sql, list(params)).fetchall()
    finally:
        conn.close()


def current_state(db_path: Path, executor: str) -> dict[str, dict[str, Any]]:
    """key -> the `current_state` row of `executor`, as a dict."""
    columns = "key, status, error_class, error_kind, attempts, http_status, size, md5, run_id"
    rows = query(db_path, f"SELECT {columns} FROM current_state WHERE executor = ?", [executor])
    names = [c.strip() for c in columns.split(",")]
    return {row[0]: dict(zip(names, row, strict=True)) for row in rows}


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


def run_resources(
    data_dir: Path, *, proxy: Any = None, **settings: Any
) -> dict[str, dg.ConfigurableResource]:
    """The executor assets' resources for an in-process run; `settings` of ScrapeSettings."""
    return {
        "scrape_settings": ScrapeSettingsResource(**settings),
        "status_store": StatusStoreResource(data_dir=str(data_dir)),
        "proxy_provider": proxy if proxy is not None else ProxyProviderResource(),
    }


def run_assets(
    instance: dg.DagsterInstance,
    resources: Mapping[str, Any],
    selection: Any,
    tags: Mapping[str, str],
    run_config: Mapping[str, Any] | None = None,
) -> dg.ExecuteInProcessResult:
    """One in-process run of the executor assets in `selection`; failures do not raise."""
    return dg.materialize(
        executor_assets,
        selection=selection,
        instance=instance,
        tags=dict(tags),
        run_config=dict(run_config or {}),
        resources=dict(resources),
        raise_on_error=False,
    )


def store_and_add(
    layout: DataLayout,
    instance: dg.DagsterInstance,
    rows: Sequence[tuple[str, str] | Mapping[str, Any]],
) -> list[str]:
    """Store tasks (`(key, url)` or a record with params) through the intake and add them as
    partitions, in order."""
    records = [row if isinstance(row, Mapping) else {"key": row[0], "url": row[1]} for row in rows]
    specs = [build_task(dict(record), Path("rows"), n) for n, record in enumerate(records)]
    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        report = add_tasks(layout.ensure(), specs, ledger=ledger)
    assert not report.errors, report.errors
    add_task_partitions(instance, report.keys)
    return report.keys


def assert_failed_only_through_tasks(result: dg.ExecuteInProcessResult, failed: int) -> None:
    """The run failed, and only as the asset's own `dg.Failure` counting its failed tasks."""
    assert not result.success
    failures = result.get_step_failure_events()
    assert len(failures) == 1
    error = failures[0].step_failure_data.error
    assert error is not None
    assert error.cls_name == "Failure", error.to_string()
    assert f"Failure: {failed} of " in error.message, error.message


def snapshot_files(folder: Path) -> dict[str, bytes]:
    """Name -> bytes of every regular file directly in `folder` (hidden ones left out)."""
    return {
        p.name: p.read_bytes()
        for p in sorted(folder.iterdir())
        if p.is_file() and not p.name.startswith(".")
    }


def sensor_context(instance: dg.DagsterInstance, data_dir: Path) -> dg.SensorEvaluationContext:
    """A sensor evaluation context with the status store of `data_dir` and the automation
    settings wired from the environment, as the definitions wire them."""
    store = StatusStoreResource(data_dir=str(data_dir))
    resources = {"status_store": store, "automation_settings": automation_settings_from_env()}
    return dg.build_sensor_context(instance=instance, resources=resources)


def scrape_range(
    instance: dg.DagsterInstance, data_dir: Path, first: str, last: str, **settings: Any
) -> dg.ExecuteInProcessResult:
    """An in-process `scrape` run over `first...last` with default resources."""
    resources = run_resources(data_dir, **settings)
    return run_assets(instance, resources, ["scrape"], range_tags(first, last))
