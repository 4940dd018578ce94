"""Rendering, ours against Crawlee's PlaywrightCrawler on the same script-built pages, side by
side in one run (issue 44's peer; issue 63's shards): pages per second and peak memory of each
side's processes, by kind of process, at 1 shard and more.

    .venv/bin/python -m bench.bench_render_peer                      # 500 pages, 1 shard
    .venv/bin/python -m bench.bench_render_peer --pages 500 --shards 1,2,4
    .venv/bin/python -m bench.bench_render_peer --pages 200 --rounds 2 --json r.json

The bundled site (`Site(pages=10)`) runs in a process of its own, held by a helper that is
re-parented away from this process: it is in neither side's process tree. Both sides render the
same N URLs `/app/item/{i % 12}?n={i}` (each a shell whose script fetches its JSON and writes
the `<h1>` "Scripted item i" and its links; its image `/app/logo.png` should be blocked), split
into S shards (`--shards`, each count measured in turn): S processes started together, each
over a contiguous slice, as a sharded run's steps are.

- ours: per shard `bench.render_peer.shard`, a process running the engine's chain `scrape`,
  `render`, `pages` over its slice in the data folder the shards share, with the shipped
  render settings (4 pages at once per shard), each shard with a browser of its own as
  shipped. `--no-memory-args` leaves out the browser's memory switches: what they save and
  cost. Pages/s is N over the slowest shard's chain run, browser start and teardown
  included.
- Crawlee: per shard `bench/peers/crawlee_render/crawl.mjs`, a PlaywrightCrawler
  (maxConcurrency 4, its autoscaling otherwise as it ships: it starts at 1 page and grows;
  images, fonts and media blocked by URL pattern; each page awaited until its `<h1>`; storage
  in memory) in a Node process of its own, with its own browser (Crawlee shares none between
  processes); pages/s is N over the slowest process's `crawler.run()`, browser start and
  teardown included (the processes' wall time, Node's start too, is shown apart). Crawlee 3
  and Playwright (versions pinned in its `package.json`) are installed once by this benchmark
  with npm (install scripts off, no browser downloaded) into `--node-dir` (default
  `/var/tmp/scrapeflow-bench-crawlee`), reused while `package.json` is unchanged. Both sides
  drive the same Chromium: `--chromium`, by default the one ours picks
  (`render_chromium_path: auto`: Debian's headless shell when installed, which is also what
  Playwright runs headless when it downloads its browsers; else `/usr/bin/chromium`).

While each side runs, a thread here samples every 0.5 s the summed RSS and PSS
(/proc/<pid>/smaps_rollup) of that side's whole process trees: ours is the shard processes
(the engine, driving its browser over the DevTools pipe) and every Chromium process below
them; Crawlee's is its Node processes and every Chromium process below them. The
peaks of those sums are the figures compared, and at each side's peak its PSS per kind of
process (python, node, Chromium's browser, renderers, the WebUI renderer, GPU, network and
storage utilities, zygotes: `render_peer/kinds.py`). Node processes are stopped with SIGTERM,
then SIGKILL to their trees and to Chromium's process groups after 5 s (on SIGTERM Playwright
closes the browser but Crawlee keeps retrying, so it does not end by itself). Each side's pages
are then checked the same way: a page counts when its `<h1>` reads "Scripted item i" (ours:
from the DOM stored as `<key>.render`; Crawlee's: the row its crawler wrote), and the site's
count of `/app/logo.png` requests is shown per side. With `--rounds` > 1 the sides alternate
which runs first; pages/s is the median over rounds, memory the highest peak.

Printed per shard count: per side pages, pages with the right `<h1>`, pages/s, peak PSS and
RSS (MiB), the Chromium share, PSS per kind of process, images requested; then ours / Crawlee
for pages/s and for peak PSS and RSS, and the issue's goal (pages/s ratio >= 1 with peak PSS
ratio <= 0.5) as PASS or FAIL, nothing asserted; last, one line per shard count. The machine
may be shared: the cores other processes kept busy meanwhile are shown. Every process started
here (the site and its helper, the shards, Node and its Chromium) is stopped on exit, on Ctrl-C
and on SIGTERM.
"""

import argparse
import json
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.lib.report import machine_info, write_json
from bench.render_peer.detached_site import DetachedSite
from bench.render_peer.install import install_peer
from bench.render_peer.processes import stopped_on_signals
from bench.render_peer.report import print_report, print_shards, summarise
from bench.render_peer.sides import run_crawlee, run_ours
from scrapeflow_dagster.engine.render.browser import chromium_executable
from scrapeflow_dagster.engine.settings import RenderSettings

DEFAULT_NODE_DIR = Path("/var/tmp/scrapeflow-bench-crawlee")


def _shard_counts(text: str) -> list[int]:
    counts = [int(part) for part in text.split(",") if part.strip()]
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"shard counts are positive integers, got {text!r}")
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--shards",
        type=_shard_counts,
        default=[1],
        help="shard counts to measure, e.g. 1,2,4 (each side split into that many processes)",
    )
    parser.add_argument(
        "--chromium-arg",
        action="append",
        default=[],
        help="a Chromium switch added to ours (to measure one; repeatable)",
    )
    parser.add_argument(
        "--no-memory-args",
        action="store_true",
        help="ours: without the browser's MEMORY_ARGS (to measure what they save)",
    )
    parser.add_argument(
        "--chromium",
        default=chromium_executable(RenderSettings()),
        help="the Chromium both sides drive (default: what `render_chromium_path: auto` picks)",
    )
    parser.add_argument("--json", metavar="PATH", help="write the figures to PATH as JSON")
    parser.add_argument(
        "--node-dir",
        type=Path,
        default=DEFAULT_NODE_DIR,
        help=f"where the Crawlee peer is installed (default {DEFAULT_NODE_DIR})",
    )
    args = parser.parse_args(argv)
    if not args.chromium or not Path(args.chromium).exists():
        raise SystemExit(
            f"{args.chromium or 'no Chromium'} is missing"
            " (on Debian: apt-get install chromium-headless-shell)"
        )
    versions = {**install_peer(args.node_dir), "chromium": args.chromium}
    flags = (*(["--no-memory-args"] if args.no_memory_args else []),)
    by_shards: dict[int, list[dict[str, dict[str, Any]]]] = {}
    with (
        stopped_on_signals(),
        tempfile.TemporaryDirectory(prefix="bench-render-peer-") as tmp,
        DetachedSite() as site,
    ):
        for shards in args.shards:
            rounds = by_shards.setdefault(shards, [])
            for r in range(args.rounds):
                order = ("ours", "crawlee") if r % 2 == 0 else ("crawlee", "ours")
                found: dict[str, dict[str, Any]] = {}
                for side in order:
                    root = Path(tmp) / f"{side}-{shards}-{r}"
                    root.mkdir()
                    if side == "ours":
                        found[side] = run_ours(
                            site,
                            args.pages,
                            root,
                            shards=shards,
                            chromium=args.chromium,
                            chromium_args=tuple(args.chromium_arg),
                            shard_flags=flags,
                        )
                    else:
                        found[side] = run_crawlee(
                            site,
                            args.node_dir,
                            args.pages,
                            root,
                            chromium=args.chromium,
                            shards=shards,
                        )
                    shown = {k: v for k, v in found[side].items() if k != "log_tail"}
                    print(
                        f"shards {shards} round {r}: {side}: {json.dumps(shown, default=str)}",
                        flush=True,
                    )
                    shutil.rmtree(root, ignore_errors=True)
                rounds.append(found)
    summaries = {shards: summarise(rounds) for shards, rounds in by_shards.items()}
    for shards, summary in summaries.items():
        print_report(summary, versions, args.rounds, shards=shards)
    print_shards(summaries)
    write_json(
        args.json,
        {
            "machine": machine_info(),
            "versions": versions,
            "chromium_args_added": args.chromium_arg,
            "ours_flags": flags,
            "summary": {str(shards): summary for shards, summary in summaries.items()},
            "rounds": {str(shards): rounds for shards, rounds in by_shards.items()},
        },
    )
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except KeyboardInterrupt as stop:
        print(f"\ninterrupted ({stop}); everything started here was stopped", file=sys.stderr)
        raise SystemExit(128 + getattr(stop, "signum", signal.SIGINT)) from None
