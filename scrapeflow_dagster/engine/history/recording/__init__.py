"""Recording: the rows runs record, their spool files, the `Ledger` that writes them, and the
sync that moves the spool into DuckDB.

Writers never open DuckDB on the hot path: a `Ledger` buffers rows and spools them to JSONL
files, and `sync_spool` moves them into DuckDB whenever it gets the lock (idempotently per
file, so a crash loses or doubles no row).

Modules:
    rows: `TaskRow`, `StepRow`, `OutputRow`, `PageRow`, `FrontierRow`, `OutputColumnsRow`.
    spool_lines: each row's spool line (JSONL, secrets redacted).
    spool: the spool folder, its file names, listing, and setting aside unusable files.
    ledger: `Ledger`, the buffered writer runs use (it keeps an open marker: `markers`).
    sync: ingest of spool files into DuckDB, one transaction per batch.
    render_choices: `render: auto`'s evidence per URL pattern taken from the outputs, and the
        table published as a file beside DuckDB for runs to read without its lock.

May import: `history.database`, `history.markers`, `engine.state`, `engine.redact`,
`engine.canonical` (a task's canonical URL, kept beside it), duckdb, orjson.
"""
