"""One shard of our side, in a process of its own (as a sharded run's step is): the engine's
chain `scrape`, `render`, `pages` over the pages FIRST..FIRST+COUNT-1 of the benchmark, in the
data folder every shard shares; its seconds written to OUT as JSON.

    python -m bench.render_peer.shard DATA SITE_URL FIRST COUNT OUT [--chromium PATH]
        [--chromium-arg ARG]... [--no-memory-args]

To measure what each part saves (never shipped by this): `--chromium-arg` adds a switch to the
shipped `CHROMIUM_ARGS`, `--no-memory-args` leaves out `MEMORY_ARGS`.
"""

import argparse
import asyncio
import json
import time
from pathlib import Path

from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.render import render
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.render import browser
from scrapeflow_dagster.engine.run.execute import execute_async
from scrapeflow_dagster.engine.settings import AUTO_CHROMIUM, RenderSettings, ScrapeSettings
from scrapeflow_dagster.site.content.scripted import SCRIPTED_ITEMS


def shard_tasks(site_url: str, first: int, count: int) -> dict[str, dict[str, object]]:
    """The tasks of pages FIRST..FIRST+COUNT-1 (keys and URLs as `bench_render.measure`'s)."""
    return {
        f"r{i:05d}": {"url": f"{site_url}/app/item/{i % SCRIPTED_ITEMS}?n={i}", "render": True}
        for i in range(first, first + count)
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("site_url")
    parser.add_argument("first", type=int)
    parser.add_argument("count", type=int)
    parser.add_argument("out", type=Path)
    parser.add_argument("--chromium", default=AUTO_CHROMIUM, help="the Chromium driven")
    parser.add_argument("--chromium-arg", action="append", default=[])
    parser.add_argument("--no-memory-args", action="store_true", help="without MEMORY_ARGS")
    args = parser.parse_args(argv)
    if args.no_memory_args:
        browser.MEMORY_ARGS = ()
    if args.chromium_arg:
        browser.CHROMIUM_ARGS = (*browser.CHROMIUM_ARGS, *args.chromium_arg)
    tasks = shard_tasks(args.site_url, args.first, args.count)
    started = time.perf_counter()
    done = asyncio.run(
        execute_async(
            [scrape, render, pages],
            args.data,
            tasks,
            settings=ScrapeSettings(render=RenderSettings(chromium_path=args.chromium)),
        )
    )
    seconds = time.perf_counter() - started
    args.out.write_text(json.dumps({"seconds": seconds, "succeeded": len(done)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
