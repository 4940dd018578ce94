"""scrapeflow-dagster: web-scraping workflows as Dagster assets.

`scrapeflow_dagster.engine` is plain async Python (no Dagster); the Dagster layer adapts it, on
floors that only look down (each package's `__init__` says what it may import):

    cli                     the `scrapeflow` command
    demo, definitions       the demo; the code location `workspace.yaml` names
    defs | crawling         the location's assets, sensors, schedules | crawls as Dagster runs
    dagster_cli             the `dagster` command lines run for users
    scaleout                shards as steps, the local and Celery executors
    lib                     executor assets, partitions, resources, events, link intake
    instance, broker        the Dagster home: its dagster.yaml, the Celery broker it records
    storage                 the batched event log storages, retention
    engine, site            the scraping engine (no Dagster); the bundled test site
"""
