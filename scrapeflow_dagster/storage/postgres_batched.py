"""The module path `dagster.yaml` files written before 0.2.0 name for a Postgres home's event
log storage (`module: scrapeflow_dagster.storage.postgres_batched`): it lives in
`postgres.event_log` now, and homes already initialised keep loading."""

from scrapeflow_dagster.storage.postgres.event_log import BatchedPostgresEventLogStorage

__all__ = ["BatchedPostgresEventLogStorage"]
