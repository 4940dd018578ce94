"""Fixtures of the crawl tests: a fresh data dir, and the seed URL the `discover` tests crawl."""

from pathlib import Path

import pytest

from scrapeflow_dagster.engine.state.layout import DataLayout

SEED = "http://shop.example.com/graph/0"


@pytest.fixture
def layout(tmp_path: Path) -> DataLayout:
    """An empty data dir, created."""
    return DataLayout(tmp_path / "data").ensure()
