"""Dagster instance storage tuned for runs of many partitions.

`sqlite_batched.BatchedSqliteEventLogStorage` is Dagster's SQLite event log storage with the
asset events of a process (one materialisation and one planned materialisation per partition)
written in batches. It is configured from `dagster.yaml`, never imported by assets. Modules here
may import Dagster and SQLAlchemy, and nothing from the engine or the definitions.
"""
