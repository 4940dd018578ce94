"""Dagster instance storage tuned for runs of many partitions.

The batched event log storages are Dagster's own with the asset events of a process (one
materialisation and one planned materialisation per partition) written in batches:
`sqlite_batched.BatchedSqliteEventLogStorage` (the embedded home) and
`postgres_batched.BatchedPostgresEventLogStorage` (`scrapeflow home init --postgres`). They
share the per-process buffer (`buffer`); `batch_write` and `postgres_write` write a batch with
the rows stock Dagster writes; `version_guard` turns batching off on untested Dagster versions.
`retention` (rules in `retention_sql`, run by `retention_backends`) deletes the asset events a
newer one superseded and old runs' logs, as a home's `retention:` block says.
Importing the buffer (both storages and the definitions do) makes the process read Dagster's
migration scripts once (`migration_scripts`), whichever storage it then opens.
They are configured from `dagster.yaml`, never imported by assets. Modules here may import
Dagster, dagster-postgres and SQLAlchemy, and nothing from the engine or the definitions.
"""
