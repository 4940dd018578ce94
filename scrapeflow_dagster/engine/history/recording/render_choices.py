"""`render_choices`: what `render: auto` learned per URL pattern, and its published copy.

Each `render: auto` output of the `render` step carries its pattern's evidence at that moment
(`pattern`: compared renders, how many the browser made a difference to, pages decided, the
last check; `engine.render.choice`). Ingest keeps the largest counts per pattern, which are the
newest (`UPSERT_SQL`, from the spool's output rows: no row of its own, and `db rebuild`
restores it from the status files, as it does `outputs`).

Runs read it at their first `render: auto` page, and a run must neither wait for DuckDB's writer
nor hold the file against it (DuckDB locks the file for a reader too). So whoever holds the
write lock after an ingest publishes the table as a JSON file beside the database
(`DataLayout.render_choices_path`, written atomically), and runs read that
(`engine.render.choice_store`).
"""

import logging
from pathlib import Path

import duckdb
import orjson

from scrapeflow_dagster.engine.state.atomic import write_bytes_atomic
from scrapeflow_dagster.engine.state.layout import RENDER_CHOICES_NAME, DataLayout
from scrapeflow_dagster.engine.state.schema import stamp

logger = logging.getLogger(__name__)

# Beside the DuckDB file (`DataLayout.render_choices_path`, which `render.choice_store` reads).
SNAPSHOT_NAME = RENDER_CHOICES_NAME

# The shipped `render` executor's outputs (its function's name): an output of any other step
# costs the ingest no JSON lookup.
RENDER_EXECUTOR = "render"

COLUMNS = (
    "pattern",
    "judgement",
    "pages_sampled",
    "pages_browser_needed",
    "pages_seen",
    "checked_at",
    "checked_by",
    "updated_at",
    "run_id",
)

_EVIDENCE = "output->'pattern'"

# Each output's evidence (a check made in the output's own run names no run, as the executor
# does not know its run: it is the output's).
_EVIDENCE_ROWS = f"""
SELECT {_EVIDENCE}->>'url_pattern' AS pattern, {_EVIDENCE}->>'judgement' AS judgement,
    CAST({_EVIDENCE}->>'pages_sampled' AS INTEGER) AS sampled,
    CAST({_EVIDENCE}->>'pages_browser_needed' AS INTEGER) AS needed,
    CAST({_EVIDENCE}->>'pages_seen' AS BIGINT) AS seen,
    TRY_CAST({_EVIDENCE}->>'checked_at' AS TIMESTAMP) AS checked_at,
    CASE WHEN {_EVIDENCE}->>'checked_at' IS NULL THEN NULL
         ELSE coalesce({_EVIDENCE}->>'checked_by', run_id) END AS checked_by,
    ended_at, run_id
FROM spool
WHERE kind = 'o' AND executor = '{RENDER_EXECUTOR}'
  AND json_type({_EVIDENCE}) = 'OBJECT' AND {_EVIDENCE}->>'url_pattern' IS NOT NULL
"""


def _newer(column: str) -> str:
    """The table's `column` taken from the newer evidence (by its output's end)."""
    return (
        f"{column} = CASE WHEN excluded.updated_at >= render_choices.updated_at"
        f" THEN excluded.{column} ELSE render_choices.{column} END"
    )


# A run's counts start from the table's and only grow, so the newest evidence of a pattern has
# the largest. Shards of one run start from the same counts and each adds its own: the largest
# of each count is kept, so a shard that found the pattern static never undoes another's
# `browser` (a newest-wins rule would), and the last check is the latest of all.
UPSERT_SQL = f"""
INSERT INTO render_choices ({", ".join(COLUMNS)})
SELECT pattern,
    CASE WHEN max(needed) > 0 THEN 'browser' ELSE arg_max(judgement, sampled) END,
    max(sampled), max(needed), max(seen),
    max(checked_at), arg_max(checked_by, checked_at),
    max(ended_at), arg_max(run_id, ended_at)
FROM ({_EVIDENCE_ROWS})
GROUP BY pattern
ON CONFLICT (pattern) DO UPDATE SET
    judgement = CASE
        WHEN excluded.pages_browser_needed > 0 OR render_choices.pages_browser_needed > 0
            THEN 'browser'
        WHEN excluded.pages_sampled >= render_choices.pages_sampled THEN excluded.judgement
        ELSE render_choices.judgement END,
    {", ".join(f"{c} = greatest(excluded.{c}, render_choices.{c})" for c in COLUMNS[2:5])},
    checked_by = CASE
        WHEN render_choices.checked_at IS NULL OR excluded.checked_at > render_choices.checked_at
            THEN excluded.checked_by
        ELSE render_choices.checked_by END,
    checked_at = greatest(excluded.checked_at, render_choices.checked_at),
    {_newer("run_id")},
    updated_at = greatest(excluded.updated_at, render_choices.updated_at)
"""

# Whether a batch has any `render` output: a batch of the default chain has none, and this
# costs it a scan of two columns rather than the upsert's JSON lookups.
_ANY_SQL = f"SELECT count(*) FROM spool WHERE kind = 'o' AND executor = '{RENDER_EXECUTOR}'"

_READ_SQL = f"SELECT {', '.join(COLUMNS)} FROM render_choices ORDER BY pattern"


def ingest(conn: duckdb.DuckDBPyConnection) -> None:
    """Take the evidence of the temp table `spool`'s `render` outputs into `render_choices`
    (call it in the ingest's transaction)."""
    found = conn.execute(_ANY_SQL).fetchone()
    if found and found[0]:
        conn.execute(UPSERT_SQL)


def snapshot_path(db_path: Path) -> Path:
    """Where the published copy of `render_choices` of the database `db_path` goes."""
    return DataLayout(Path(db_path).parent).render_choices_path


def database_path(conn: duckdb.DuckDBPyConnection) -> Path | None:
    """The file of `conn`'s database; None for an in-memory one."""
    row = conn.execute(
        "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchone()
    return Path(row[0]) if row and row[0] else None


def publish(conn: duckdb.DuckDBPyConnection, *, changed: bool) -> Path | None:
    """Write `render_choices` to its snapshot file (call it holding the write lock, after a
    commit): when `changed` (an ingest took rows in) or the file is missing, and the table has
    rows; a table without rows removes the file (a database started over forgets what the old
    one learned). A crash before this call leaves an older copy, written again next time.

    Returns:
        The file written, or None when nothing was.

    Raises:
        OSError: when the file cannot be written (the caller decides whether that matters).
    """
    db_path = database_path(conn)
    if db_path is None:
        return None
    target = snapshot_path(db_path)
    held = conn.execute("SELECT count(*) FROM render_choices").fetchone()
    if not held or not held[0]:
        target.unlink(missing_ok=True)
        return None
    if not changed and target.exists():
        return None
    rows = conn.execute(_READ_SQL).fetchall()
    choices = [
        {
            **dict(zip(COLUMNS, row, strict=True)),
            "checked_at": stamp(row[5]) if row[5] is not None else None,
            "updated_at": stamp(row[7]) if row[7] is not None else None,
        }
        for row in rows
    ]
    write_bytes_atomic(target, orjson.dumps({"render_choices": choices}))
    return target


def publish_best_effort(conn: duckdb.DuckDBPyConnection, *, changed: bool) -> None:
    """`publish`, a failure logged: the rows are in DuckDB, and the next sync writes again."""
    try:
        publish(conn, changed=changed)
    except (OSError, duckdb.Error):
        logger.warning("render choices not published beside the database", exc_info=True)
