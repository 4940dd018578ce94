"""Crawls as Dagster runs: a crawl is streamed through one real run of the executor chain,
started in this process against the Dagster instance, whose step takes in its pages' links and
runs the new tasks in the same pass (`lib.run_growth`); between rounds the frontier's links
become tasks and partitions as the frontier sensor makes them (`lib.link_intake`).

Modules:
    runs: `LocationRuns`, runs of a code location's executor assets started in this process.
    rounds: `run_crawl`, a crawl's run (or its rounds, where a run cannot follow links) until
        nothing in it is left to run, reported per depth.

May import `scrapeflow_dagster.lib`, `scaleout` (how many shards a run uses), `dagster_cli`
(the definitions module), `broker` and `instance` (the Dagster home) and the engine. Never
`defs` (a crawl runs whatever code location it is given), `cli`, `definitions` or `demo`.
"""
