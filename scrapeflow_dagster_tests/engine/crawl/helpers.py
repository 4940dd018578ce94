"""Crawl tests' helpers: seeds stored through the intake, pages "parsed" by writing the `pages`
output a real parse leaves (its `links`), and the frontier read back from DuckDB."""

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb

from scrapeflow_dagster.engine.crawl import Discovery, discover
from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.state.files import load_status, write_status
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.schema import record_success, utc_now
from scrapeflow_dagster_tests.support.tasks import store_tasks


def seed(layout: DataLayout, url: str, **params: Any) -> str:
    """Store one seed task (`url` plus crawl params, as a task file gives them); its key."""
    return store_tasks(layout, [{"url": url, **params}])[0]


def parsed(layout: DataLayout, key: str, links: Sequence[str]) -> None:
    """Record that `pages` parsed task `key` and found `links`."""
    status = load_status(layout.status_dir, key)
    assert status is not None, key
    record_success(status, "pages", {"links": list(links)}, ended=utc_now(), attempts=1)
    write_status(layout.status_dir, key, status)


def run_discovery(layout: DataLayout, keys: Sequence[str]) -> Discovery:
    """`discover` over `keys`, its rows synced into DuckDB."""
    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        return discover(layout, keys, ledger=ledger)


def frontier(layout: DataLayout) -> list[Mapping[str, Any]]:
    """The `frontier` table, ordered by parent and URL."""
    conn = duckdb.connect(str(layout.db_path), read_only=True)
    try:
        rel = conn.sql("SELECT * FROM frontier ORDER BY parent, url")
        return [dict(zip(rel.columns, row, strict=True)) for row in rel.fetchall()]
    finally:
        conn.close()


def params_of(layout: DataLayout, key: str) -> dict[str, Any]:
    """The stored params of task `key`."""
    status = load_status(Path(layout.status_dir), key)
    assert status is not None, key
    return dict(status["params"])
