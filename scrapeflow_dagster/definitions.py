"""The code location: `dagster dev -w workspace.yaml` or `-m scrapeflow_dagster.definitions`.

To add your own executors, build the definitions the same way with your list:
`scrapeflow_definitions([scrape_asset, validation_asset, pages_asset, word_count_asset])`.
On a machine with several cores the shipped assets are sharded, one shard per core
(`SCRAPEFLOW_SHARDS` overrides it, 1 = unsharded); with `SCRAPEFLOW_CELERY_BROKER` set their
steps run on Celery workers (docs/scaling-out.md).
"""

from scrapeflow_dagster.defs.long_lived import collection_paused

# No cyclic collection while the location's modules load and it is built: the build freezes
# what it loaded and resumes collection (`defs.long_lived`); a failed import resumes it too.
with collection_paused():
    from scrapeflow_dagster.defs.assets import executor_assets
    from scrapeflow_dagster.defs.factory import scrapeflow_definitions
    from scrapeflow_dagster.scaleout.celery import executor_from_env
    from scrapeflow_dagster.scaleout.local import local_executor

    # Celery when the environment names a broker; else Dagster's default executor with step
    # processes forked from a preloaded server (seconds per step saved, `scaleout.local`).
    defs = scrapeflow_definitions(
        executor_assets, executor=executor_from_env() or local_executor(__name__)
    )
