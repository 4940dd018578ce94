"""What the Dagster layer is built from: an engine executor as a partitioned Dagster asset, the
partitions and resources it runs with, and the events its step writes. Scale-out (`scaleout`),
crawls (`crawling`) and the code location (`defs`) build on it; it builds on none of them.

Modules:
    partitions: `tasks`, the one dynamic partitions definition (a task's key is a partition),
        and adding to it in chunks.
    resources: where the data lives, how the sensors and the refresh schedule decide, where
        proxies come from (`StatusStoreResource`, `AutomationSettingsResource`,
        `ProxyProviderResource`), the bounds check they share.
    scrape_settings: `ScrapeSettingsResource`, how every executor run fetches.
    chain: the executor chain: which executors a step runs, in which order, what each needs.
    executor_assets: `executor_asset` and `chain_asset`, the asset factories.
    executor_events: a run's events: a materialisation or observation per (asset, partition),
        the `no_failed_tasks` check, the run's failure.
    partition_events: a materialisation stored as stock Dagster stores it, without the trip
        through the run's loggers.
    table_metadata: each executor's results table (row count, columns) as asset metadata.
    link_intake: `take_in` and `register`, the links of parsed pages made tasks and partitions
        (what `scrapeflow crawl`, the frontier sensor and a run's step share).
    run_growth: `RunGrowth`, what a run's step does with its parsed pages' links: new tasks
        run in the same pass.

May import: the engine, `storage` (the event buffer, the version guard), `instance` and
`broker` (the Dagster home), Dagster. Never `scaleout`, `crawling`, `defs`, `cli`,
`definitions`, `dagster_cli` or `demo`.
"""
