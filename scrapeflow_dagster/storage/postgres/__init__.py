"""A Postgres home's event log: dagster-postgres's storage with batched writes.

`event_log` (`BatchedPostgresEventLogStorage`, named in `dagster.yaml`), `write` (a batch in
one transaction with the rows dagster-postgres writes), `vacuum` (VACUUM of the event log while
a run deletes planned rows, so its later rows reuse their space).

May import: Dagster, dagster-postgres, SQLAlchemy, the other `storage` packages. Never the
engine or the Dagster layer above.
"""
