"""Retention: the asset events a newer one superseded, and old runs' logs, deleted as a home's
`retention:` block says.

`prune` (the policy, read from `dagster.yaml`, and a prune pass), `sql` (which rows a newer row
of the same asset, kind and partition supersedes), `backends` (where that SQL runs: SQLite's
index and run shards, or Postgres), `postgres_reindex` (the event log's bloated indexes rebuilt
after a Postgres prune).

May import: Dagster, SQLAlchemy, `storage.dagster_internals`. Never the engine or the Dagster
layer above.
"""
