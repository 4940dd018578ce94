"""Which pages changed and how often, read from DuckDB's `changes` table and `revisits` view.

What the `changes_report` asset publishes, so the UI can plot it across materialisations. The
window is the `since_days` before `now` (naive UTC, as the ledger stores times): counts "in the
window" take the changes detected in it; the totals and the revisit figures take everything.
"""

import math
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

import duckdb

from scrapeflow_dagster.engine.history.database.connection import connect_readonly
from scrapeflow_dagster.engine.history.recording.sync import sync_spool
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.schema import utc_now

DEFAULT_SINCE_DAYS = 7.0
DEFAULT_TOP = 20
# The widest bar of the per-day plot, in `#` characters.
BAR_WIDTH = 40
NO_CHANGE_YET = "No change recorded yet."

# The window is (since, now]: a change at the window's start belongs to the window before.
_IN_WINDOW = "detected_at > $since AND detected_at <= $now"
_TOTALS_SQL = f"""
SELECT count(*),
    count(*) FILTER ({_IN_WINDOW}),
    count(DISTINCT key) FILTER ({_IN_WINDOW})
FROM changes
"""
_REVISITS_SQL = """
SELECT count(*), count(*) FILTER (due_at <= $now), median(interval_seconds) FROM revisits
"""
_BY_HOST_SQL = f"""
SELECT coalesce(host, ''), count(*) AS changes, count(DISTINCT key) AS pages
FROM changes WHERE {_IN_WINDOW}
GROUP BY ALL ORDER BY changes DESC, pages DESC, 1 LIMIT $top
"""
# The URL as the task requested it (the newest change's, should a task's URL ever be rewritten)
# and the title the latest parse found, when the page is still parsed.
_BY_PAGE_SQL = f"""
SELECT c.key, arg_max(c.url, c.detected_at), count(*) AS changes,
    max(c.detected_at) AS last_detected_at, any_value(p.title)
FROM changes c LEFT JOIN pages p ON p.key = c.key
WHERE {_IN_WINDOW.replace("detected_at", "c.detected_at")}
GROUP BY c.key ORDER BY changes DESC, last_detected_at DESC, c.key LIMIT $top
"""
_BY_DAY_SQL = f"""
SELECT CAST(detected_at AS DATE) AS day, count(*) FROM changes WHERE {_IN_WINDOW}
GROUP BY ALL ORDER BY day
"""


@dataclass(frozen=True)
class HostChanges:
    """One host's changes in the window."""

    host: str  # lower case, with its port when the URL gave one; '' for a URL without a host
    changes: int
    pages_changed: int


@dataclass(frozen=True)
class PageChanges:
    """One page's changes in the window."""

    key: str
    url: str  # as the task requested it
    changes: int
    last_detected_at: datetime
    title: str | None  # what the latest parse found; None when it found none


@dataclass(frozen=True)
class ChangeSummary:
    """How many changes were found (all time and in the window), where and when, and what the
    revisit schedule has learned."""

    since_days: float
    now: datetime  # the window's end, naive UTC
    changes_total: int
    changes_in_window: int
    pages_changed_in_window: int
    pages_observed: int  # pages with a learned revisit state
    pages_due: int  # of those, due again at `now`
    median_interval_hours: float | None  # None when no page has a revisit state yet
    # The `top` hosts and pages with the most changes in the window, most first.
    by_host: list[HostChanges] = field(default_factory=list)
    by_page: list[PageChanges] = field(default_factory=list)
    # Every day of the window, oldest first, days without a change included (count 0).
    by_day: list[tuple[date, int]] = field(default_factory=list)

    @property
    def since(self) -> datetime:
        """The window's start (excluded)."""
        return self.now - timedelta(days=self.since_days)

    def markdown(self) -> str:
        """The totals, then changes by host, the most-changed pages and a per-day plot made of
        `#` bars, as Markdown (URLs as requested)."""
        median = "" if self.median_interval_hours is None else f"{self.median_interval_hours:.1f} h"
        lines = [
            f"Changes in the {self.since_days:g} days up to {self.now:%Y-%m-%d %H:%M} UTC.",
            "",
            "| changes (all time) | changes in window | pages changed | pages observed "
            "| pages due | median interval |",
            "|---|---|---|---|---|---|",
            f"| {self.changes_total} | {self.changes_in_window} | "
            f"{self.pages_changed_in_window} | {self.pages_observed} | {self.pages_due} "
            f"| {median} |",
        ]
        if not self.changes_total:
            return "\n".join([*lines, "", NO_CHANGE_YET])
        if not self.changes_in_window:
            return "\n".join([*lines, "", "No change in the window."])
        lines += ["", "### By host", "", "| host | changes | pages changed |", "|---|---|---|"]
        lines += [f"| {_cell(h.host)} | {h.changes} | {h.pages_changed} |" for h in self.by_host]
        lines += [
            "",
            "### Most changed pages",
            "",
            "| key | URL | changes | last detected | title now |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {_cell(p.key)} | {_cell(p.url)} | {p.changes} "
            f"| {p.last_detected_at:%Y-%m-%d %H:%M:%S} | {_cell(p.title or '')} |"
            for p in self.by_page
        ]
        lines += ["", "### Per day", "", "| day | changes | |", "|---|---|---|"]
        bars = zip(self.by_day, self._bars(), strict=True)
        lines += [f"| {day} | {n} | {bar} |" for (day, n), bar in bars]
        return "\n".join(lines)

    def _bars(self) -> list[str]:
        """Each day's bar, scaled so the busiest day is `BAR_WIDTH` long; a day with any change
        gets at least one `#`, so a quiet day is not mistaken for none."""
        most = max((n for _, n in self.by_day), default=0)
        if not most:
            return ["" for _ in self.by_day]
        return ["#" * (max(1, round(BAR_WIDTH * n / most)) if n else 0) for _, n in self.by_day]


def change_summary(
    layout: DataLayout,
    *,
    since_days: float = DEFAULT_SINCE_DAYS,
    top: int = DEFAULT_TOP,
    now: datetime | None = None,
) -> ChangeSummary:
    """Sync the spool (best effort: a locked DuckDB keeps it for later), then summarise the
    changes found in the `since_days` before `now`.

    Args:
        layout: the data folder whose ledger is read.
        since_days: the window's length, in days.
        top: how many hosts and pages the tables list, most changes first.
        now: the window's end and the time pages are due by, naive UTC (default: now).

    Raises:
        ValueError: when `since_days` is not a positive finite number or `top` is below 1.
        LedgerLockedError: when a writer held the file for longer than the default wait.
    """
    if not (math.isfinite(since_days) and since_days > 0):
        raise ValueError(f"since_days must be a positive number of days, got {since_days}")
    if top < 1:
        raise ValueError(f"top must be at least 1, got {top}")
    now = now or utc_now()
    # A sync alone, not a Ledger: one records nothing here (as `report.crawl_summary`).
    sync_spool(layout.db_path, layout.spool_dir)
    conn = connect_readonly(layout.db_path)
    try:
        return _summarise(conn, since_days=since_days, top=top, now=now)
    finally:
        conn.close()


def _summarise(
    conn: duckdb.DuckDBPyConnection, *, since_days: float, top: int, now: datetime
) -> ChangeSummary:
    since = now - timedelta(days=since_days)
    window = {"since": since, "now": now}
    ((total, in_window, pages_changed),) = conn.execute(_TOTALS_SQL, window).fetchall()
    ((observed, due, median),) = conn.execute(_REVISITS_SQL, {"now": now}).fetchall()
    by_host = [
        HostChanges(host=str(h), changes=int(n), pages_changed=int(p))
        for h, n, p in conn.execute(_BY_HOST_SQL, {**window, "top": top}).fetchall()
    ]
    by_page = [
        PageChanges(
            key=str(key),
            url=str(url or ""),
            changes=int(n),
            last_detected_at=last,
            title=None if title is None else str(title),
        )
        for key, url, n, last, title in conn.execute(
            _BY_PAGE_SQL, {**window, "top": top}
        ).fetchall()
    ]
    per_day = dict(conn.execute(_BY_DAY_SQL, window).fetchall())
    return ChangeSummary(
        since_days=since_days,
        now=now,
        changes_total=int(total),
        changes_in_window=int(in_window),
        pages_changed_in_window=int(pages_changed),
        pages_observed=int(observed),
        pages_due=int(due),
        median_interval_hours=None if median is None else float(median) / 3600,
        by_host=by_host,
        by_page=by_page,
        by_day=[(day, int(per_day.get(day, 0))) for day in _days(since, now)],
    )


def _days(since: datetime, now: datetime) -> list[date]:
    """The calendar days the window (since, now] touches, oldest first."""
    first, last = since.date(), now.date()
    return [first + timedelta(days=n) for n in range((last - first).days + 1)]


def _cell(text: str) -> str:
    """`text` kept as written in a Markdown table cell: only what would end the cell or the
    row is escaped (a `|` shows as itself)."""
    return text.replace("|", "\\|").replace("\r", " ").replace("\n", " ")
