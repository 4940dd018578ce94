"""Crawls as Dagster runs: one long-lived process drives a crawl's rounds against the Dagster
instance (each round one real run of the executor chain, started in this process), and the
frontier's links become tasks and partitions the same way for `scrapeflow crawl` and for the
frontier sensor.

Modules:
    runs: `LocationRuns`, runs of a code location's executor assets started in this process.
    frontier: `take_in`, a discovery with the runs' settings, and `register`, its new tasks as
        partitions: what the CLI's crawl and the frontier sensor share.
    rounds: `run_crawl`, the rounds of one crawl until nothing in it is left to run.
"""
