"""Fixtures of the crawl tests: a fresh data dir."""

from pathlib import Path

import pytest

from scrapeflow_dagster.engine.state.layout import DataLayout


@pytest.fixture
def layout(tmp_path: Path) -> DataLayout:
    """An empty data dir, created."""
    return DataLayout(tmp_path / "data").ensure()
