"""A scrape run in a process of its own, for the cross-process politeness tests.

`python -m scrapeflow_dagster_tests.engine.polite.engine_child DIR KEY_PREFIX MAX_PER_HOST URL...`
runs `scrape` over the URLs (keys `<prefix><i>`) and prints how many succeeded.
"""

import asyncio
import sys
from pathlib import Path

from scrapeflow_dagster.engine.executor import execute_async
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.settings import PoliteSettings, ScrapeSettings


def main() -> None:
    directory, prefix, max_per_host, *urls = sys.argv[1:]
    settings = ScrapeSettings(polite=PoliteSettings(max_per_host=int(max_per_host)))
    tasks = {f"{prefix}{i}": {"url": url} for i, url in enumerate(urls)}
    succeeded = asyncio.run(
        execute_async(
            [scrape], Path(directory), tasks, max_parallelism=50, timeout=300, settings=settings
        )
    )
    print(len(succeeded), flush=True)


if __name__ == "__main__":
    main()
