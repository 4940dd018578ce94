"""scrapeflow-dagster: web-scraping workflows as Dagster assets.

`scrapeflow_dagster.engine` is plain async Python (no Dagster); `scrapeflow_dagster.defs` adapts it.
"""
