"""Dagster instance storage tuned for runs of many partitions, configured from `dagster.yaml`
and never imported by assets.

The batched event log storages are Dagster's own with the asset events of a process (one
materialisation and one planned materialisation per partition) written in batches. By concept:

    sqlite/             the embedded home's storage (`sqlite.event_log`) and its run shards
    postgres/           a Postgres home's storage (`postgres.event_log`), its writes and VACUUM
    batches/            the per-process buffer, a batch's rows, templates, compact bodies, and
                        the write-time deletes (`lean_writes`)
    planned/            a run's planned rows: stored, written behind its start, paced (Postgres)
    retention/          what a prune deletes (`sql`), where it runs (`backends`), the policy
    dagster_internals/  what leans on `dagster._core...`, behind the `version_guard`

`sqlite_batched` and `postgres_batched` keep the module paths homes initialised before 0.2.0
name in their `dagster.yaml`. Importing the buffer (both storages and the definitions do) makes
the process read Dagster's migration scripts once, whichever storage it then opens.

May import: Dagster, dagster-postgres, SQLAlchemy, and of the engine only `engine.state.atomic`
(a process's liveness, for SQLite's run shards). Never the Dagster layer above.
"""
