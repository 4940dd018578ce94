"""A process's asset events written in batches, with the rows stock Dagster writes.

`buffer` (the per-process buffer both event log storages share: when it is flushed),
`buffered_events` (which events it holds, which end a run, its `dagster.yaml` fields), `write`
(a batch's rows as Dagster's SQLite event log writes them), `templates` (a run's per-partition
materialisations serialised from one template), `bodies` (compact event bodies deflated against
`body_dictionary`, part of the on-disk format), `lean_writes` (the rows no read needs, left out
or deleted as a batch is written: the write-time deletes).

May import: Dagster, SQLAlchemy, `storage.planned`, `storage.dagster_internals`. Never the
engine or the Dagster layer above.
"""
