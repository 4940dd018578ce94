"""`lastmod.tsv`: the `lastmod` and `changefreq` a sitemap gave each page it lists (`scrapeflow
refresh` reads the newest per key): `key<TAB>lastmod` (ISO, UTC; empty when not given), then
`<TAB>changefreq` when given (files written before it have two columns)."""

from collections.abc import Iterable
from datetime import UTC, datetime

from scrapeflow_dagster.engine.crawl.frontier.batches import frontier_lock
from scrapeflow_dagster.engine.crawl.frontier.generation import journal_lines
from scrapeflow_dagster.engine.crawl.frontier.journal import append_lines, frontier_dir
from scrapeflow_dagster.engine.state.layout import DataLayout


def note_lastmods(
    layout: DataLayout, dated: Iterable[tuple[str, datetime | None, str | None]]
) -> None:
    """Append `(key, lastmod, changefreq)` a sitemap gave (lastmod aware, stored in UTC)."""
    lines = []
    for key, when, changefreq in dated:
        stamp = when.astimezone(UTC).isoformat() if when is not None else ""
        lines.append(f"{key}\t{stamp}\t{changefreq}" if changefreq else f"{key}\t{stamp}")
    if lines:
        with frontier_lock(layout):  # (a stale frontier is retired first: these are current)
            append_lines(frontier_dir(layout) / "lastmod.tsv", lines)


def sitemap_hints(layout: DataLayout) -> tuple[dict[str, datetime], dict[str, str]]:
    """The newest sitemap `lastmod` and `changefreq` noted per key (a date that does not parse
    is skipped)."""
    dates: dict[str, datetime] = {}
    frequencies: dict[str, str] = {}
    for line in journal_lines(layout, "lastmod.tsv"):
        key, _, rest = line.partition("\t")
        text, _, changefreq = rest.partition("\t")
        if changefreq:
            frequencies[key] = changefreq
        if not text:
            continue
        try:
            dates[key] = datetime.fromisoformat(text)
        except ValueError:
            continue
    return dates, frequencies


def lastmods(layout: DataLayout) -> dict[str, datetime]:
    """The newest sitemap `lastmod` noted per key (a line that does not parse is skipped)."""
    return sitemap_hints(layout)[0]
