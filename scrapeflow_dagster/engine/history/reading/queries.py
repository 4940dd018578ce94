"""The DuckDB queries users run on results, as named SQL and a plain-text summary.

A summary syncs the spool first (best effort), so it includes the rows runs have spooled.
"""

import duckdb

from scrapeflow_dagster.engine.history.database.connection import connect_readonly
from scrapeflow_dagster.engine.history.recording.sync import sync_spool
from scrapeflow_dagster.engine.state.layout import DataLayout

# The same queries docs/duckdb.md shows; each reads the `current_state` view or `step_runs`.
QUERIES: dict[str, str] = {
    "success rate per executor": """
        SELECT executor, count(*) AS tasks,
               count(*) FILTER (status = 'SUCCESS') AS succeeded,
               round(100.0 * count(*) FILTER (status = 'SUCCESS') / count(*), 1) AS success_pct
        FROM current_state GROUP BY executor ORDER BY executor""",
    "failures by error class": """
        SELECT executor, error_kind, error_class, count(*) AS tasks
        FROM current_state WHERE status = 'ERROR'
        GROUP BY ALL ORDER BY tasks DESC LIMIT 20""",
    "failures by domain": """
        SELECT domain, count(DISTINCT key) FILTER (status = 'ERROR') AS failed_tasks,
               count(DISTINCT key) AS tasks
        FROM current_state GROUP BY domain ORDER BY failed_tasks DESC LIMIT 20""",
    "slowest hosts": """
        SELECT domain, count(*) AS requests,
               round(avg(elapsed_seconds), 3) AS avg_seconds,
               round(quantile_cont(elapsed_seconds, 0.95), 3) AS p95_seconds
        FROM step_runs WHERE executor = 'scrape' AND status <> 'SKIPPED'
        GROUP BY domain ORDER BY p95_seconds DESC LIMIT 10""",
    "crawl frontier": """
        SELECT crawl, count(*) FILTER (outcome = 'added') AS added,
               count(*) FILTER (outcome = 'known') AS known,
               count(*) FILTER (outcome NOT IN ('added', 'known')) AS skipped,
               max(depth) FILTER (outcome = 'added') AS deepest
        FROM frontier GROUP BY crawl ORDER BY crawl LIMIT 20""",
}


def summary_text(layout: DataLayout, *, lock_timeout_seconds: float = 10.0) -> str:
    """Sync pending rows into DuckDB, then run every query in `QUERIES` as text tables.

    A sync that finds DuckDB locked is said in the text, not raised: the summary then shows
    what was ingested before.

    Args:
        layout: The data folder whose DuckDB file and spool are read.
        lock_timeout_seconds: How long to wait for a writer to let go of DuckDB.

    Returns:
        One titled table per query, separated by blank lines.

    Raises:
        LedgerLockedError: when a writer held the file for `lock_timeout_seconds`.
        duckdb.Error: for a broken database.
    """
    # Nothing of ours is buffered: a sync, not a Ledger's close (which would wait its own 10 s).
    synced = sync_spool(layout.db_path, layout.spool_dir, lock_timeout_seconds=lock_timeout_seconds)
    parts = []
    if synced.locked:
        parts.append(f"(DuckDB is held by another process; {synced.pending_files} files wait)")
    conn = connect_readonly(layout.db_path, lock_timeout_seconds=lock_timeout_seconds)
    try:
        for title, sql in QUERIES.items():
            parts.append(f"-- {title}\n{_table(conn, sql)}")
    finally:
        conn.close()
    return "\n\n".join(parts)


def _table(conn: duckdb.DuckDBPyConnection, sql: str) -> str:
    relation = conn.sql(sql)
    header = [str(c) for c in relation.columns]
    rows = [[("" if v is None else str(v)) for v in row] for row in relation.fetchall()]
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)
    ]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines) if rows else lines[0] + "\n(no rows)"
