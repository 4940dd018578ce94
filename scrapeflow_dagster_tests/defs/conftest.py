"""Fixtures of the Dagster-layer tests: the real local site in a thread, a temp data folder,
an ephemeral Dagster instance, the resources, and helpers that add tasks and run assets."""

import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from scrapeflow_dagster.engine.state.layout import DATA_DIR_ENV, DataLayout
from scrapeflow_dagster.lib.partitions import TASKS_PARTITIONS_NAME
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.support.partitions import range_tags
from scrapeflow_dagster_tests.support.processes import init_dagster_home
from scrapeflow_dagster_tests.support.runs import run_assets, run_resources
from scrapeflow_dagster_tests.support.tasks import TaskRows, store_and_add

SITE_PAGES = 200
SITE_PAGE_BYTES = 2000

# Dagster marks a few APIs used here as beta/preview; the warnings say nothing about us.
# Filtered at import (collection, when the definitions load) and for every test.
_DAGSTER_NOTICES = (dg.BetaWarning, dg.PreviewWarning)
for _category in _DAGSTER_NOTICES:
    warnings.filterwarnings("ignore", category=_category)


def pytest_configure(config: pytest.Config) -> None:
    for category in _DAGSTER_NOTICES:
        config.addinivalue_line("filterwarnings", f"ignore::dagster.{category.__name__}")


@pytest.fixture
def site_thread() -> Iterator[SiteThread]:
    """The bundled site on a free 127.0.0.1 port, served from a thread (fresh counters)."""
    with SiteThread(pages=SITE_PAGES, page_bytes=SITE_PAGE_BYTES) as site:
        yield site


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> DataLayout:
    """A fresh data folder, also named by `$SCRAPEFLOW_DATA_DIR` for code that reads it."""
    root = tmp_path / "data"
    monkeypatch.setenv(DATA_DIR_ENV, str(root))
    return DataLayout(root).ensure()


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    """An ephemeral (in-memory) Dagster instance."""
    with dg.DagsterInstance.ephemeral() as ephemeral:
        yield ephemeral


@pytest.fixture
def resources(layout: DataLayout) -> dict[str, Any]:
    """The executor assets' resources: fast retries, the temp data folder, no proxies."""
    return run_resources(
        layout.root,
        max_attempts=2,
        backoff_base_seconds=0.01,
        backoff_max_seconds=0.05,
        request_timeout_seconds=5.0,
    )


@pytest.fixture
def add_task_rows(
    layout: DataLayout, instance: dg.DagsterInstance
) -> Callable[[TaskRows], list[str]]:
    """`add(rows)`: store `(key, url)` tasks and add them as `tasks` partitions, in order."""

    def add(rows: TaskRows) -> list[str]:
        keys = store_and_add(layout, instance, rows)
        assert instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME)[-len(keys) :] == keys
        return keys

    return add


Materialize = Callable[..., dg.ExecuteInProcessResult]


@pytest.fixture
def materialize_range(instance: dg.DagsterInstance, resources: dict[str, Any]) -> Materialize:
    """`run(asset, first, last, run_config=None, tags=None)`: one run of an executor asset over
    a partition range, as a backfill or sensor launches it; failures do not raise."""

    def run(
        asset: str | list[str],
        first: str | None = None,
        last: str | None = None,
        *,
        run_config: Mapping[str, Any] | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> dg.ExecuteInProcessResult:
        run_tags = dict(tags or {})
        if first is not None and last is not None:
            run_tags.update(range_tags(first, last))
        selection = [asset] if isinstance(asset, str) else asset
        return run_assets(instance, resources, selection, run_tags, run_config)

    return run


@pytest.fixture
def dagster_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temp `DAGSTER_HOME` (SQLite storage, telemetry off), set for this process too."""
    home = init_dagster_home(tmp_path / "dagster_home")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    return home
