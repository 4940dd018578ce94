"""The module path `dagster.yaml` files written before 0.2.0 name for the embedded home's event
log storage (`module: scrapeflow_dagster.storage.sqlite_batched`): it lives in `sqlite.event_log`
now, and homes already initialised keep loading."""

from scrapeflow_dagster.storage.sqlite.event_log import BatchedSqliteEventLogStorage

__all__ = ["BatchedSqliteEventLogStorage"]
