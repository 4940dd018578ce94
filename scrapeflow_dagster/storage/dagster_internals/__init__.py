"""What leans on Dagster's internals (`dagster._core...`), behind the version guard.

`version_guard` (the Dagster versions verified, and the fallback on others), `migration_scripts`
(Dagster's migration scripts read once per process), `record_constructors` (its record
constructors compiled before a run's data is in sight), `partition_keys` (a process's copy of
each dynamic partitions definition's keys, read again only once the table changed).

May import: Dagster. Nothing else of ours.
"""
