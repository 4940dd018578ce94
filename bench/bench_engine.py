"""Engine benchmark: `execute_async([scrape])` against a bare aiohttp loop doing the same work.

The bundled local site runs in its own process (`run_site_forever` on a free 127.0.0.1 port).
Every measurement runs in a fresh child process, so its peak RSS is its own, and writes into a
fresh temporary folder that is deleted afterwards. Variants alternate A B A B ...:

    A  `execute_async([scrape], dir, tasks, max_parallelism=P)`, tasks a generator of
       `(key, {"url": ...})` pairs (streamed, never a list).
    B  the honest baseline: P workers pull from the same kind of generator, GET, read the body,
       md5 it, write it atomically (temp file + `os.replace`) and write a small status JSON
       atomically (orjson, indent 2).

Usage (from the repository root):

    .venv/bin/python -m bench.bench_engine                      # 10k tasks, 5 rounds each
    .venv/bin/python -m bench.bench_engine --tasks 100000 --rounds 1
    .venv/bin/python -m bench.bench_engine --scale-check        # A at 10k and 100k: RSS ratio
    .venv/bin/python -m bench.bench_engine --profile A --rounds 0   # cProfile of one A run
    .venv/bin/python -m bench.bench_engine --json bench-engine.json

Targets printed: A/B throughput ratio >= 0.90, A's peak RSS <= 150 MiB at 10k tasks and
< 1.3x that at 100k.

Each line also shows the CPU the measured process spent per page, the site's CPU share and how
many cores other processes kept busy meanwhile: on a small shared machine pages/s swings with
what else runs, CPU per page much less. Output goes to the system temp folder (a real disk, as
in production); `--tmp-dir /dev/shm` takes the file system out and shows the engine's own cost.
"""

import argparse
import json
import os
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.engine.child import run_child
from bench.engine.parent import run_profiles, run_rounds, run_scale_check
from bench.lib.site import Site


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=10_000, help="tasks per run (10000)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of A then B (5)")
    parser.add_argument("--parallelism", type=int, default=100, help="tasks in flight (100)")
    parser.add_argument("--pages", type=int, default=None, help="site pages (default: tasks)")
    parser.add_argument("--page-bytes", type=int, default=20_000, help="page size (20000)")
    parser.add_argument("--warmup", type=int, default=1000, help="unreported B tasks first")
    parser.add_argument(
        "--scale-check", action="store_true", help="only run A at 10k and 100k, compare RSS"
    )
    parser.add_argument("--scale-small", type=int, default=10_000, help=argparse.SUPPRESS)
    parser.add_argument("--scale-large", type=int, default=100_000, help=argparse.SUPPRESS)
    parser.add_argument(
        "--profile",
        nargs="?",
        const="A",
        choices=["A", "B", "AB"],
        help="after the rounds, run A (or B, or both) once more under cProfile",
    )
    parser.add_argument("--profile-dir", default=tempfile.gettempdir())
    parser.add_argument("--profile-top", type=int, default=30)
    parser.add_argument("--tmp-dir", default=None, help="where the temp output folders go")
    parser.add_argument("--json", metavar="PATH", help="write the figures to PATH as JSON")
    # Internal: one measurement in this process.
    parser.add_argument("--child", choices=["A", "B"], help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    parser.add_argument("--profile-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        args.pages = args.pages or args.tasks
        run_child(args)
        return 0

    largest = args.scale_large if args.scale_check else args.tasks
    pages = args.pages or largest
    report: dict[str, Any] = {
        "config": {
            "tasks": args.tasks,
            "rounds": args.rounds,
            "parallelism": args.parallelism,
            "pages": pages,
            "page_bytes": args.page_bytes,
            "python": sys.version.split()[0],
            "cpus": os.cpu_count(),
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
        }
    }
    with Site(pages, args.page_bytes) as site:
        print(f"site {site.url}: {pages} pages of {args.page_bytes} bytes", flush=True)
        if args.scale_check:
            run_scale_check(args, site, report)
        else:
            run_rounds(args, site, report)
        if args.profile:
            run_profiles(args, site, report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
        print(f"figures written to {args.json}")
    results = report.get("rounds", [])
    if "scale_check" in report:
        results = [report["scale_check"]["small"], report["scale_check"]["large"]]
    return 0 if all(r["ok"] == r["tasks"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
