"""The code location: `dagster dev -w workspace.yaml` or `-m scrapeflow_dagster.definitions`.

To add your own executors, build the definitions the same way with your list:
`scrapeflow_definitions([scrape_asset, validation_asset, pages_asset, word_count_asset])`.
"""

from scrapeflow_dagster.defs.assets import executor_assets
from scrapeflow_dagster.defs.factory import scrapeflow_definitions

defs = scrapeflow_definitions(executor_assets)
