"""What Dagster alone costs for a crawl of ours: one process that imports the shipped code
location, opens the home's instance, and materialises the trivial floor asset
(`bench.floor_defs`) in one in-process run per crawl round, over as many partitions as the
crawl fetched at each depth. No page is fetched or parsed: a crawl that keeps every page a
partition materialised by a Dagster run cannot take less than this (`bench_peer` prints it
beside ours and Scrapy's).

    python -m bench.dagster.crawl_floor 1 12 240 249   # partitions per round
"""

import sys

import dagster as dg

import scrapeflow_dagster.definitions  # noqa: F401  (what `scrapeflow crawl` imports)
from bench.floor_defs import tasks_partitions_def, trivial
from scrapeflow_dagster.cli import exit_now


def main(sizes: list[int]) -> int:
    """Materialise `sizes[i]` new partitions in run i; returns 0."""
    with dg.DagsterInstance.get() as instance:
        keys = [f"floor-{n:06d}" for n in range(sum(sizes))]
        name = tasks_partitions_def.name or "tasks"
        start = 0
        for size in sizes:
            chunk = keys[start : start + size]
            start += size
            instance.add_dynamic_partitions(name, chunk)
            result = dg.materialize(
                [trivial],
                instance=instance,
                tags={
                    "dagster/asset_partition_range_start": chunk[0],
                    "dagster/asset_partition_range_end": chunk[-1],
                },
            )
            if not result.success:
                return 1
    return 0


if __name__ == "__main__":
    exit_now(main([int(arg) for arg in sys.argv[1:]]))  # as `scrapeflow` ends
