"""`scrapeflow status`'s exact counts: from DuckDB, and from the status files it may lag (those
an open Ledger's marker names, repaired when the Ledger is dead).

Modules:
    status_counts: `count_statuses`, `StatusCounts`.
    status_folder: the status folder's listing, and the labels of the files read.
    status_labels: the labels of errors and values the counts are grouped by (the same in SQL
        and in Python).

May import: `history.database`, `history.recording`, `history.markers`,
`history.from_status_files`, `engine.state`, `engine.errors`, `engine.redact`, duckdb.
"""
