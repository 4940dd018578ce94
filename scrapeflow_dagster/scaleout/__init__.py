"""Scaling out: one run's partitions split into shards that are separate Dagster steps
(`sharded_asset`), the settings and storage of those shards (`shards`), how many shards a
deployment and a run use (`sizing`), the local executor's step processes (`local`,
`one_process_runs`), Dagster's Celery executor chosen from the environment (`celery`) and a
Celery worker for this code location (`worker`, `celery_app`).

May import `scrapeflow_dagster.lib` (the executor assets it shards), `broker` and `instance`
(the Dagster home), `storage` and the engine. Never `crawling`, `defs`, `cli`, `definitions`,
`dagster_cli` or `demo`: the definitions, the crawls and the CLI import it.
"""
