"""The Dagster benchmark's parts, run by `python -m bench.bench_dagster`.

- `targets`: the figures the parts print a verdict against.
- `cli_runs`: one add + `dagster asset materialize` through the CLI, ours or the floor.
- `event_log`: where a run's time went, read back from its Dagster event log.
- `materialize`: floor vs ours over N partitions through the CLI (time and peak RSS).
- `backfill`: a daemon-run backfill launched through GraphQL under `dagster dev`.
- `scale`: peak RSS at 10k and at 100k partitions.
- `settings`: instance and run-config variants as ratios of time against the default.
- `postgres`: ours vs the stock floor on Postgres (`python -m bench.dagster.postgres`, run by
  `bench.run_all` on its own: it needs the server on 127.0.0.1:5432).
"""
