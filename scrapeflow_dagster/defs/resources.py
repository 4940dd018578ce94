"""Kept so that `from scrapeflow_dagster.defs.resources import ScrapeSettingsResource` (the
resource the docs have you pass to `scrapeflow_definitions(resources=...)`) and its siblings
still import from here: the resources live in `scrapeflow_dagster.lib.resources` and
`scrapeflow_dagster.lib.scrape_settings`, a floor below the definitions that use them."""

from scrapeflow_dagster.lib.resources import (
    DATA_DIR_ENV,
    AutomationSettingsResource,
    ProxyProviderResource,
    StatusStoreResource,
    automation_settings_from_env,
    proxy_resource_from_env,
)
from scrapeflow_dagster.lib.scrape_settings import ScrapeSettingsResource

__all__ = [
    "DATA_DIR_ENV",
    "AutomationSettingsResource",
    "ProxyProviderResource",
    "ScrapeSettingsResource",
    "StatusStoreResource",
    "automation_settings_from_env",
    "proxy_resource_from_env",
]
