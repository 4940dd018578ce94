"""A run's planned materialisations: one event per asset stored as one row per partition.

`rows` (the planned rows of a run and how they are stored), `behind` (rows past the first chunk
per asset written while the run goes on, and the superseded planned rows deleted as they are),
`paced` (Postgres: rows written a little ahead of the run's progress), `freed_memory` (the heap
those writers freed, given back to the system).

May import: Dagster, SQLAlchemy, `storage.batches.write`. Never the engine or the Dagster layer
above.
"""
