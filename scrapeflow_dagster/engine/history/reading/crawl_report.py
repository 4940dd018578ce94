"""A crawl's health in a few numbers and two small tables, read from DuckDB.

What the `crawl_report` asset publishes, so the UI can plot it across materialisations.
"""

from dataclasses import dataclass, field

import duckdb

from scrapeflow_dagster.engine.history.database.connection import connect_readonly
from scrapeflow_dagster.engine.history.recording.sync import sync_spool
from scrapeflow_dagster.engine.state.layout import DataLayout

FETCH_EXECUTOR = "scrape"
TOP_ROWS = 10

_TOTALS_SQL = """
SELECT
    (SELECT count(*) FROM tasks) AS tasks,
    count(*) FILTER (status = 'SUCCESS') AS succeeded,
    count(*) FILTER (status = 'ERROR') AS failed,
    coalesce(sum(size) FILTER (status = 'SUCCESS'), 0) AS bytes
FROM current_state WHERE executor = ?
"""
_P95_SQL = """
SELECT quantile_cont(elapsed_seconds, 0.95)
FROM step_runs WHERE executor = ? AND status <> 'SKIPPED'
"""
_BY_KIND_SQL = f"""
SELECT executor, coalesce(error_kind, ''), coalesce(error_class, ''), count(*) AS tasks
FROM current_state WHERE status = 'ERROR'
GROUP BY ALL ORDER BY tasks DESC, 1, 2, 3 LIMIT {TOP_ROWS}
"""
_BY_HOST_SQL = f"""
SELECT coalesce(domain, ''), count(*) FILTER (status = 'ERROR') AS failed, count(*) AS tasks
FROM current_state WHERE executor = ?
GROUP BY ALL HAVING failed > 0 ORDER BY failed DESC, 1 LIMIT {TOP_ROWS}
"""
# What discovery and the sitemap reader did not follow, and why (refused requests, such as the
# address guard's, are failures: `by_kind` names their error class).
_NOT_FOLLOWED_SQL = """
SELECT outcome, count(*) AS urls FROM frontier
WHERE outcome NOT IN ('added', 'known')
GROUP BY ALL ORDER BY urls DESC, 1
"""


@dataclass(frozen=True)
class CrawlSummary:
    """Totals of the fetching step's current state, failures by kind and by host, and the
    URLs not followed by why."""

    tasks: int
    succeeded: int
    failed: int
    bytes: int
    p95_seconds: float | None
    pages_parsed: int
    by_kind: list[tuple[str, str, str, int]] = field(default_factory=list)
    by_host: list[tuple[str, int, int]] = field(default_factory=list)
    # URLs links and sitemaps gave that were not followed, by frontier outcome.
    not_followed: list[tuple[str, int]] = field(default_factory=list)

    @property
    def success_pct(self) -> float:
        """Succeeded fetches as a percentage of fetches that ended (0 when none did)."""
        ended = self.succeeded + self.failed
        return round(100.0 * self.succeeded / ended, 1) if ended else 0.0

    def markdown(self) -> str:
        """Totals, then failures by kind and by host, and URLs not followed, as markdown tables."""
        p95 = "" if self.p95_seconds is None else f"{self.p95_seconds:.3f} s"
        lines = [
            "| tasks | succeeded | failed | success % | bytes | p95 fetch | pages parsed |",
            "|---|---|---|---|---|---|---|",
            f"| {self.tasks} | {self.succeeded} | {self.failed} | {self.success_pct} "
            f"| {self.bytes} | {p95} | {self.pages_parsed} |",
        ]
        if self.by_kind:
            lines += ["", "| step | kind | error class | tasks |", "|---|---|---|---|"]
            lines += [f"| {s} | {k} | {c} | {n} |" for s, k, c, n in self.by_kind]
        if self.by_host:
            lines += ["", "| host | failed | tasks |", "|---|---|---|"]
            lines += [f"| {h} | {f} | {n} |" for h, f, n in self.by_host]
        if self.not_followed:
            lines += ["", "| not followed | URLs |", "|---|---|"]
            lines += [f"| {why} | {n} |" for why, n in self.not_followed]
        return "\n".join(lines)


def crawl_summary(layout: DataLayout, *, fetch_executor: str = FETCH_EXECUTOR) -> CrawlSummary:
    """Sync the spool (best effort: a locked DuckDB keeps it for later), then summarise.

    Raises:
        LedgerLockedError: when a writer held the file for longer than the default wait.
    """
    # A sync alone, not a Ledger: one records nothing here, and would sync twice and keep a marker.
    sync_spool(layout.db_path, layout.spool_dir)
    conn = connect_readonly(layout.db_path)
    try:
        return _summarise(conn, fetch_executor)
    finally:
        conn.close()


def _summarise(conn: duckdb.DuckDBPyConnection, executor: str) -> CrawlSummary:
    tasks, succeeded, failed, size = conn.execute(_TOTALS_SQL, [executor]).fetchall()[0]
    ((p95,),) = conn.execute(_P95_SQL, [executor]).fetchall()
    ((pages,),) = conn.execute("SELECT count(*) FROM pages").fetchall()
    by_kind = [
        (str(s), str(k), str(c), int(n)) for s, k, c, n in conn.execute(_BY_KIND_SQL).fetchall()
    ]
    by_host = [
        (str(h), int(f), int(n)) for h, f, n in conn.execute(_BY_HOST_SQL, [executor]).fetchall()
    ]
    not_followed = [(str(w), int(n)) for w, n in conn.execute(_NOT_FOLLOWED_SQL).fetchall()]
    return CrawlSummary(
        tasks=int(tasks),
        succeeded=int(succeeded),
        failed=int(failed),
        bytes=int(size),
        p95_seconds=None if p95 is None else float(p95),
        pages_parsed=int(pages),
        by_kind=by_kind,
        by_host=by_host,
        not_followed=not_followed,
    )
