"""Retry: when to try again. `requests` decides per request inside one run (error kinds,
backoff, Retry-After); `between_runs` decides per task between runs (due, wait, give up,
re-fetch); `ranges` groups due tasks into few contiguous runs.

May import: `engine.errors`, `engine.redact`, `engine.settings`, `engine.state.schema`.
Never Dagster.
"""
