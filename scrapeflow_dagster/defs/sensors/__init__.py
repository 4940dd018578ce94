"""The sensors, and the shipped ones built over the shipped executor assets (`scrape`,
`validation`, `pages`): `inbox` (task files dropped in the inbox), `retry` (failures due
again, downstream catch-up), `frontier` (links of parsed pages become tasks), `retention`
(prunes the Dagster home as its dagster.yaml's `retention:` block says). Build your own
with the `build_*` functions, or all definitions at once with `scrapeflow_definitions`
(defs/factory.py)."""

from scrapeflow_dagster.defs.assets import executor_assets
from scrapeflow_dagster.defs.sensors.frontier import build_frontier_sensor
from scrapeflow_dagster.defs.sensors.inbox import build_inbox_sensor
from scrapeflow_dagster.defs.sensors.retention import build_retention_sensor
from scrapeflow_dagster.defs.sensors.retry import build_retry_sensor

inbox_sensor = build_inbox_sensor(executor_assets)
retry_sensor = build_retry_sensor(executor_assets)
frontier_sensor = build_frontier_sensor(executor_assets)
retention_sensor = build_retention_sensor()

__all__ = [
    "build_frontier_sensor",
    "build_inbox_sensor",
    "build_retention_sensor",
    "build_retry_sensor",
    "frontier_sensor",
    "inbox_sensor",
    "retention_sensor",
    "retry_sensor",
]
