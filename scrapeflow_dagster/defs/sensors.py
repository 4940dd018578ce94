"""The shipped sensors, built over the shipped executor assets (`scrape`, `validation`,
`pages`). Build your own with `build_inbox_sensor` / `build_retry_sensor`, or all definitions
at once with `scrapeflow_definitions` (defs/factory.py)."""

from scrapeflow_dagster.defs.assets import executor_assets
from scrapeflow_dagster.defs.inbox_sensor import build_inbox_sensor
from scrapeflow_dagster.defs.retry_sensor import build_retry_sensor

inbox_sensor = build_inbox_sensor(executor_assets)
retry_sensor = build_retry_sensor(executor_assets)

__all__ = ["build_inbox_sensor", "build_retry_sensor", "inbox_sensor", "retry_sensor"]
