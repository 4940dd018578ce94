"""`scrapeflow site` (serve the bundled test site) and `scrapeflow demo` (the main job on it)."""

import argparse
import os

from scrapeflow_dagster.cli import common
from scrapeflow_dagster.engine.state.layout import DATA_DIR_ENV


def add_parser(sub: common.Subparsers, parent: argparse.ArgumentParser) -> None:
    """`site [--port] [--pages] [--graph-size] [--graph-delay-seconds] [--crawl-delay-seconds]`
    and `demo [--pages] [--port]`."""
    site = sub.add_parser("site", help="serve the bundled local test site")
    site.add_argument("--port", type=int, default=8765)
    site.add_argument("--pages", type=int, default=1000)
    site.add_argument(
        "--graph-size", type=int, default=None, help="how many /graph/{n} nodes (default 1093)"
    )
    site.add_argument(
        "--graph-delay-seconds",
        type=float,
        default=0.0,
        help="how long each /graph/{n} page waits before answering",
    )
    site.add_argument(
        "--crawl-delay-seconds",
        type=float,
        default=None,
        help="the Crawl-delay robots.txt announces (default: none)",
    )
    site.set_defaults(func=cmd_site)

    demo = sub.add_parser("demo", parents=[parent], help="scrape the bundled site through Dagster")
    demo.add_argument("--pages", type=int, default=300)
    demo.add_argument("--port", type=int, default=8765)
    demo.set_defaults(func=cmd_demo)


def cmd_site(args: argparse.Namespace) -> int:
    """Serve the bundled local site until interrupted (127.0.0.1 only)."""
    from scrapeflow_dagster.site.crawling.graph import DEFAULT_GRAPH_SIZE
    from scrapeflow_dagster.site.server import run_site_forever

    run_site_forever(
        "127.0.0.1",
        args.port,
        pages=args.pages,
        graph_size=DEFAULT_GRAPH_SIZE if args.graph_size is None else args.graph_size,
        graph_delay_seconds=args.graph_delay_seconds,
        crawl_delay_seconds=args.crawl_delay_seconds,
        on_ready=lambda url: print(f"serving {url}"),
    )
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """The main job: scrape the bundled site through Dagster and print the DuckDB summary."""
    from scrapeflow_dagster.demo import run_demo

    os.environ[DATA_DIR_ENV] = str(common.layout(args).root)  # the demo's processes use it
    return run_demo(pages=args.pages, port=args.port)
