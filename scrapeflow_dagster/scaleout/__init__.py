"""Scaling out: one run's partitions split into shards that are separate Dagster steps
(`sharded_asset`), the settings and storage of those shards (`shards`), Dagster's Celery
executor chosen from the environment (`celery`) and a Celery worker for this code location
(`worker`).

May import the Dagster adapters (`scrapeflow_dagster.defs`) and the engine; nothing imports it
but the definitions and the CLI.
"""
