"""The embedded home's event log: Dagster's SQLite event log storage with batched writes.

`event_log` (`BatchedSqliteEventLogStorage`, named in `dagster.yaml`), `shards` (run shards
opened and created without Dagster's fixed costs).

May import: Dagster, SQLAlchemy, the other `storage` packages, and `engine.state.atomic` (a
process's liveness, for a shard's lock). Never the Dagster layer above.
"""
