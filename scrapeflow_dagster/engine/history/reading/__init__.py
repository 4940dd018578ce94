"""What users read out of DuckDB: named queries, pandas frames, and the reports.

Modules:
    queries: `QUERIES` (the queries users run) and `summary_text` (`scrapeflow db summary`).
    frames: results as pandas frames (`read_pages`, `read_steps`, `read_current_state`,
        `read_outputs`, `read_extracted`), and the SQL exports type outputs with.
    crawl_report: `crawl_summary`, a crawl's summary (the `crawl_report` asset).
    change_report: `change_summary`, the changes refreshes found (the `changes_report` asset).

May import: `history.database`, `history.recording` (a report syncs the spool first),
`engine.state`, duckdb, orjson, pandas.
"""
