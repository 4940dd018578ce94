"""Crawls as Dagster runs: a crawl is streamed through one real run of the executor chain,
started in this process against the Dagster instance, whose step takes in its pages' links and
runs the new tasks in the same pass; the frontier's links become tasks and partitions the same
way for `scrapeflow crawl` and for the frontier sensor.

Modules:
    runs: `LocationRuns`, runs of a code location's executor assets started in this process.
    frontier: `take_in`, a discovery with the runs' settings, and `register`, its new tasks as
        partitions: what the CLI's crawl and the frontier sensor share.
    stream: `RunGrowth`, what a run's step does with its parsed pages' links (`follow_links`).
    rounds: `run_crawl`, a crawl's run (or its rounds, where a run cannot follow links) until
        nothing in it is left to run, reported per depth.
"""
