"""DuckDB's side of the history: the tables, the statements that fill them from the spool, the
one-writer connection, and the table of each task's current state.

Modules:
    schema: `SCHEMA_SQL`, the tables and views (`tasks`, `step_runs`, `pages`, `outputs`,
        `extracted`, `page_text`, `changes`, `frontier`, `render_choices`, the `revisits`
        view...).
    spool_sql: `SPOOL_COLUMNS` (the spool as DuckDB reads it) and the ingest statements.
    connection: opening DuckDB under its one-writer rule, with lock backoff; who holds the lock.
    current: `step_current`, each task and executor's latest step row, and the `current_state`
        view over it.
    prune: the history (step runs, changes, spool files' names) older than a date deleted,
        each task's current state kept.

May import: `engine.redact` (a lock holder's command line), duckdb. Nothing else of `history`:
the other subpackages stand on this one.
"""
