"""`current_state` kept as a table: each task's latest step run per executor, updated as rows
are ingested, not found again by a window over every run ever recorded.

`current_state` was a view ranking all of `step_runs` per (key, executor): at a million tasks
after five chain runs (13 million step rows) it took 2.9-3.5 s, most of `scrapeflow status`,
and it grows with every refresh. Now `step_current` holds the latest row of each (key,
executor) (`status <> 'SKIPPED'`, the newest `ended_at`, then `seq`, as the view ranked them)
and the view reads it. Every transaction that appends step rows updates it (`refresh_current`):
the pairs the new rows touch are ranked again from their current row and the new rows alone,
so the cost follows the rows ingested, not the history, and a reader never sees the two
disagree. `step_current_upto` records the `step_runs` it reflects (the highest `seq`, the row
count); a writer that opens the file first catches up with rows appended by a version that did
not keep the table, and rebuilds it from `step_runs` when rows were removed (by hand), when
the table is new or its columns differ from `step_runs`' (a column added there), and in
`scrapeflow db rebuild`. `step_runs` is append-only: a row edited in place by hand shows in
`current_state` after `scrapeflow db rebuild`. The first catch-up of a large history holds
DuckDB's write lock meanwhile (25 s from 13 million step rows).
"""

import contextlib

import duckdb

_CREATE_SQL = """
CREATE TABLE step_current AS SELECT * FROM step_runs WITH NO DATA;
DELETE FROM step_current_upto;
"""
_UPTO_SQL = "CREATE TABLE IF NOT EXISTS step_current_upto (seq BIGINT, step_rows BIGINT)"
_COLUMNS_SQL = """
SELECT table_name, list(column_name || ' ' || data_type ORDER BY column_index)
FROM duckdb_columns()
WHERE schema_name = 'main' AND table_name IN ('step_runs', 'step_current')
GROUP BY table_name
"""

CURRENT_VIEW_SQL = """
CREATE OR REPLACE VIEW current_state AS
SELECT * FROM step_current
"""

_LATEST = (
    "QUALIFY row_number() OVER ("
    "PARTITION BY key, executor ORDER BY ended_at DESC NULLS LAST, seq DESC) = 1"
)

# The step rows appended since the last refresh, and the pairs they touch ranked again from
# their current row and those rows.
_FRESH_SQL = """
CREATE OR REPLACE TEMP TABLE fresh_steps AS
SELECT * FROM step_runs
WHERE seq > (SELECT coalesce(max(seq), -1) FROM step_current_upto) AND status <> 'SKIPPED'
"""
_NEWEST_SQL = f"""
CREATE OR REPLACE TEMP TABLE newest_steps AS
SELECT * FROM (
    SELECT c.* FROM step_current AS c
    SEMI JOIN temp.fresh_steps AS f ON c.key = f.key AND c.executor = f.executor
    UNION ALL BY NAME
    SELECT * FROM temp.fresh_steps
)
{_LATEST}
"""
# Rows go in sorted by (key, executor), so each row group of the table spans a narrow range of
# keys, and the joins on a batch's keys (a run's keys are a sorted range) skip the others: at
# a million tasks, a 64,000-row batch's refresh took 0.13 s sorted, 0.34 s not.
_REPLACE_SQL = """
DELETE FROM step_current AS c
WHERE EXISTS (
    SELECT 1 FROM temp.newest_steps AS n WHERE n.key = c.key AND n.executor = c.executor
);
INSERT INTO step_current BY NAME SELECT * FROM temp.newest_steps ORDER BY key, executor;
"""
_REBUILD_SQL = f"""
DELETE FROM step_current;
INSERT INTO step_current BY NAME
SELECT * FROM (SELECT * FROM step_runs WHERE status <> 'SKIPPED' {_LATEST})
ORDER BY key, executor;
"""
_MARK_SQL = """
DELETE FROM step_current_upto;
INSERT INTO step_current_upto SELECT coalesce(max(seq), -1), count(*) FROM step_runs;
"""
_CLEAN_SQL = "DROP TABLE IF EXISTS temp.fresh_steps; DROP TABLE IF EXISTS temp.newest_steps"


def refresh_current(conn: duckdb.DuckDBPyConnection) -> None:
    """Bring `step_current` up to the step rows appended since its last refresh (call it in
    the transaction that appended them)."""
    if _appended_only(conn):
        conn.execute(_FRESH_SQL)
        conn.execute(_NEWEST_SQL)
        conn.execute(_REPLACE_SQL)
        conn.execute(_CLEAN_SQL)
    else:
        conn.execute(_REBUILD_SQL)
    conn.execute(_MARK_SQL)


def mark_current(conn: duckdb.DuckDBPyConnection) -> None:
    """Record that `step_current` reflects `step_runs` as they are now, in the transaction
    that removed rows no task's current state is (a prune): the next writer then catches up
    from here instead of ranking the whole history again."""
    conn.execute(_MARK_SQL)


def ensure_current(conn: duckdb.DuckDBPyConnection, *, rebuild: bool = False) -> None:
    """Make `step_current` agree with `step_runs` and point `current_state` at it (a writer,
    after `SCHEMA_SQL`; the file's first use by this version fills it from its history).

    Args:
        conn: A read-write connection.
        rebuild: Rank the whole history again, whatever the table says it reflects
            (`scrapeflow db rebuild` trusts no derived table).
    """
    conn.execute(_UPTO_SQL)
    conn.execute("BEGIN TRANSACTION")
    try:
        columns = dict(conn.execute(_COLUMNS_SQL).fetchall())
        if columns.get("step_current") != columns.get("step_runs"):  # new, or a column added
            conn.execute("DROP TABLE IF EXISTS step_current")
            conn.execute(_CREATE_SQL)
        if rebuild:
            conn.execute("DELETE FROM step_current_upto")
        if not _up_to_date(conn):
            refresh_current(conn)
        conn.execute(CURRENT_VIEW_SQL)  # in the transaction: no reader sees it lag
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(duckdb.Error):  # a failed COMMIT has ended it already
            conn.execute("ROLLBACK")
        raise


def _marks(conn: duckdb.DuckDBPyConnection) -> tuple[tuple[int, int], tuple[int, int] | None]:
    """(highest seq, rows) of `step_runs` now, and as `step_current` last reflected them."""
    now = conn.execute("SELECT coalesce(max(seq), -1), count(*) FROM step_runs").fetchone()
    upto = conn.execute("SELECT seq, step_rows FROM step_current_upto").fetchall()
    assert now is not None
    return (int(now[0]), int(now[1])), ((int(upto[0][0]), int(upto[0][1])) if upto else None)


def _up_to_date(conn: duckdb.DuckDBPyConnection) -> bool:
    now, upto = _marks(conn)
    return upto == now


def _appended_only(conn: duckdb.DuckDBPyConnection) -> bool:
    """Whether `step_runs` only gained rows (all after the last refresh's highest seq) since
    `step_current` last reflected it."""
    (_, total), upto = _marks(conn)
    if upto is None:
        return False  # never filled: from the whole history
    seq, rows = upto
    newer = conn.execute("SELECT count(*) FROM step_runs WHERE seq > ?", [seq]).fetchone()
    assert newer is not None
    return total == rows + int(newer[0])
