"""The code location, the top floor of the Dagster layer: the shipped executor assets
(`assets`), the sensors (`sensors/`), the schedules (`schedules`, what they share in
`automation`), the report assets (`report_asset`, `changes_report`), the whole location from a
list of executor assets (`factory`) and what a process that builds it keeps frozen
(`long_lived`). `executor_assets` and `resources` re-export the asset factory and the
resources from their old paths.

May import `scrapeflow_dagster.lib` (what the assets, sensors and schedules are built from),
`scaleout` (sharded assets, the executors), `broker` and `instance` (the Dagster home),
`storage` (retention) and the engine. Never `crawling`, `cli`, `definitions`, `dagster_cli`
or `demo`: only `definitions`, `demo` and `cli` import it.
"""
