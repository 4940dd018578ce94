"""scrapeflow's `scrape` module (compatibility): `scrape`, `scrape_with_validation`.

The executors live in `engine.executors`; this module keeps scrapeflow's import path working.
"""

from scrapeflow_dagster.engine.executors.scrape import (
    Fetched,
    ResponseCallback,
    fetch,
    scrape,
    scrape_with_validation,
)

__all__ = ["Fetched", "ResponseCallback", "fetch", "scrape", "scrape_with_validation"]
