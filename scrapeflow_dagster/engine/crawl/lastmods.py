"""`lastmod.tsv`: the `lastmod` a sitemap gave each page it dates (`scrapeflow refresh` reads
the newest per key)."""

from collections.abc import Iterable
from datetime import UTC, datetime

from scrapeflow_dagster.engine.crawl.batches import frontier_lock
from scrapeflow_dagster.engine.crawl.generation import journal_lines
from scrapeflow_dagster.engine.crawl.journal import append_lines, frontier_dir
from scrapeflow_dagster.engine.state.layout import DataLayout


def note_lastmods(layout: DataLayout, dated: Iterable[tuple[str, datetime]]) -> None:
    """Append `(key, lastmod)` pairs a sitemap gave (aware datetimes, stored in UTC)."""
    lines = [f"{key}\t{when.astimezone(UTC).isoformat()}" for key, when in dated]
    if lines:
        with frontier_lock(layout):  # (a stale frontier is retired first: these are current)
            append_lines(frontier_dir(layout) / "lastmod.tsv", lines)


def lastmods(layout: DataLayout) -> dict[str, datetime]:
    """The newest sitemap `lastmod` noted per key (a line that does not parse is skipped)."""
    found: dict[str, datetime] = {}
    for line in journal_lines(layout, "lastmod.tsv"):
        key, _, text = line.partition("\t")
        try:
            found[key] = datetime.fromisoformat(text)
        except ValueError:
            continue
    return found
