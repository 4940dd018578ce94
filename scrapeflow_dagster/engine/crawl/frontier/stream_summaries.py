"""`streamed/TOKEN/`: what each step of a crawl's streamed run took in, left for the crawl's
driver to report."""

from pathlib import Path
from typing import Any

import orjson

from scrapeflow_dagster.engine.crawl.frontier.journal import frontier_dir
from scrapeflow_dagster.engine.state.atomic import write_bytes_atomic
from scrapeflow_dagster.engine.state.layout import DataLayout


def _summaries_dir(layout: DataLayout, token: str) -> Path:
    return frontier_dir(layout) / "streamed" / token


def save_stream_summary(layout: DataLayout, token: str, name: str, summary: dict[str, Any]) -> None:
    """Leave the driver of a crawl (`token`) what one step of its run took in: the keys it
    added and ran, and its links' outcomes per depth."""
    folder = _summaries_dir(layout, token)
    folder.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(folder / f"{name}.json", orjson.dumps(summary))


def take_stream_summaries(layout: DataLayout, token: str) -> list[dict[str, Any]]:
    """The summaries the steps of a crawl's runs left (`save_stream_summary`), removed."""
    folder = _summaries_dir(layout, token)
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob("*.json")):
        found.append(orjson.loads(path.read_bytes()))
        path.unlink()
    folder.rmdir()
    return found
