"""The code location: `dagster dev -w workspace.yaml` or `-m scrapeflow_dagster.definitions`."""

import dagster as dg

from scrapeflow_dagster.defs.assets import executor_assets
from scrapeflow_dagster.defs.resources import (
    ScrapeSettingsResource,
    StatusStoreResource,
    proxy_resource_from_env,
)

defs = dg.Definitions(
    assets=executor_assets,
    resources={
        "scrape_settings": ScrapeSettingsResource(),
        "status_store": StatusStoreResource(),
        "proxy_provider": proxy_resource_from_env(),
    },
)
