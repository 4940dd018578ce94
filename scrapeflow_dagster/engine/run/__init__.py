"""Run: a chain of executors over a stream of tasks with bounded concurrency.

`context` (what an executor is and gets), `task_session` (`context.session`, checked by the
running task's trust, following no redirect), `execute` (`execute_async`: the fan-out and the HTTP
session), `runner` (one task: lock, load, each step recorded through `state.schema`),
`deadlines` (one timer bounding every step), `feed` (the pass's tasks, which may grow as
tasks finish), `results` and `step` (a run's report).

May import: `engine.errors`, `engine.redact`, `engine.settings`, `engine.state`,
`engine.tasks.keys`, `engine.proxies` (the provider type), `engine.history` (rows of a run),
`engine.polite`, `engine.gate` (the sessions a run's requests go out through), `engine.render`
(the run's browser, started by its first page to render).
Never Dagster.
"""
