"""The code location: `dagster dev -w workspace.yaml` or `-m scrapeflow_dagster.definitions`."""

import dagster as dg

from scrapeflow_dagster.defs.assets import executor_assets
from scrapeflow_dagster.defs.resources import (
    ScrapeSettingsResource,
    StatusStoreResource,
    automation_settings_from_env,
    proxy_resource_from_env,
)
from scrapeflow_dagster.defs.schedules import refresh_schedule
from scrapeflow_dagster.defs.sensors import inbox_sensor, retry_sensor

defs = dg.Definitions(
    assets=executor_assets,
    sensors=[inbox_sensor, retry_sensor],
    schedules=[refresh_schedule],
    resources={
        "scrape_settings": ScrapeSettingsResource(),
        "status_store": StatusStoreResource(),
        "proxy_provider": proxy_resource_from_env(),
        "automation_settings": automation_settings_from_env(),
    },
)
