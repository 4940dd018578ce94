"""Tasks: where work comes from. Keys and URLs validated (`keys`), task files read line by
line with per-line errors (`intake`), params stored before anyone schedules them (`adding`),
and files dropped in the inbox handed over safely (`inbox`).

May import: `engine.errors`, `engine.redact` (a bad URL is quoted without its credentials),
`engine.canonical` (URLs checked, their canonical form),
`engine.state`, `engine.history` (tasks are recorded for DuckDB).
Never run/executors/retry/proxies, never Dagster.
"""
