"""The scrapeflow engine: crash-safe async executors over tasks. Never imports Dagster.

The data path, one folder per stage:

    tasks/      task files and the inbox -> validated tasks, params stored
    state/      <key>.status.json: the schema, atomic writes, layout, locks
    run/        execute_async: executors over tasks, bounded concurrency, step deadlines
    executors/  scrape -> validation -> pages
    retry/      per request (inside a run) and per task (between runs), range planning
    proxies/    where proxies come from and which ones are bad
    history/    DuckDB: spooled rows, sync, rebuild from status files, queries
    revisit/    whether a page changed, what changed, when to fetch it again (`pages` observes)
    content/    what a page says: its main content as text and Markdown, with its metadata

`executor`, `status`, `scrape` and `proxies` keep scrapeflow's import paths; `errors`,
`settings` and `redact` are shared by every stage.
"""
