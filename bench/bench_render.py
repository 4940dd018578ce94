"""Rendering over thousands of pages: pages per second and whether the browser's memory stays
flat (issue 44).

    .venv/bin/python -m bench.bench_render                       # 2,000 pages
    .venv/bin/python -m bench.bench_render --pages 200 --json r.json

The bundled site runs in a process of its own; this process runs the engine's chain (`scrape`,
`render`, `pages`) over N tasks, each a script-built page of `/app/item/{i}` (`?n=` keeps the N
URLs distinct; each page fetches its script and its JSON through the gate, its image refused),
with the shipped render settings (`pages_at_once`, `pages_per_context`). A thread samples, every
0.5 s, the summed RSS and PSS (/proc/<pid>/smaps_rollup) of the browser's tree (every
Chromium process below this one) and counts the pages rendered so far.

Printed: pages/s; the browser tree's PSS at its highest in each quarter of the pages (flat:
the last quarter's peak at most 1.25x the first's, printed as PASS or FAIL, nothing asserted);
its highest RSS; and that every page was rendered with its script's content (`Scripted item i`
in its text) and no image was requested.

`render: auto` (`--auto-pages N`, default 1,000, 0 to skip): N tasks, every other one a
script-built item and the others plain server-rendered pages (`/page/n`), all marked `render:
auto`, in a fresh data folder: how many of the pages that needed a browser were rendered (all,
or the crawl misses what a browser finds), how many of those that did not (the samples and
re-checks), and pages/s against rendering every page.
"""

import argparse
import asyncio
import json
import os
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.lib.polling import Poller
from bench.lib.proc_stats import descendants
from bench.lib.report import machine_info, print_table, write_json
from bench.lib.site import Site
from bench.lib.smaps import smaps_rollup_kib
from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.render import render
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.run.execute import execute_async
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.state.files import load_status
from scrapeflow_dagster.site.content.scripted import SCRIPTED_ITEMS, item_name

FLAT_RATIO = 1.25
SAMPLE_SECONDS = 0.5


class BrowserMemory(Poller):
    """Samples the summed RSS and PSS (MiB) of this process's descendants (the browser's tree)
    with the count of rendered pages at that moment, in a daemon thread."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.samples: list[tuple[int, float, float]] = []  # (pages rendered, RSS, PSS)
        super().__init__()

    def _run(self) -> None:
        me = os.getpid()
        while not self._stop.wait(SAMPLE_SECONDS):
            rss = pss = 0
            for pid in descendants(me):
                if pid == me:
                    continue
                figures = smaps_rollup_kib(pid)
                rss += figures.get("Rss", 0)
                pss += figures.get("Pss", 0)
            rendered = sum(1 for _ in self.directory.glob("*.render"))
            self.samples.append((rendered, rss / 1024, pss / 1024))


def quarter_peaks(samples: list[tuple[int, float, float]], n: int) -> list[float | None]:
    """The highest PSS sampled while each quarter of the `n` pages was being rendered."""
    peaks: list[float | None] = []
    for q in range(4):
        low, high = q * n / 4, (q + 1) * n / 4
        last = q == 3
        inside = [pss for done, _rss, pss in samples if low <= done < high or (last and done >= n)]
        peaks.append(max(inside) if inside else None)
    return peaks


def site_requests(url: str) -> dict[str, int]:
    with urllib.request.urlopen(url + "/control/requests", timeout=30) as answer:
        paths: dict[str, int] = json.loads(answer.read())["paths"]
    return paths


def measure(n: int, site_url: str, root: Path) -> dict[str, Any]:
    """Render `n` script-built pages through the chain; the figures."""
    tasks = {
        f"r{i:05d}": {"url": f"{site_url}/app/item/{i % SCRIPTED_ITEMS}?n={i}", "render": True}
        for i in range(n)
    }
    data = root / "data"
    settings = ScrapeSettings()
    with BrowserMemory(data) as memory:
        started = time.perf_counter()
        done = asyncio.run(execute_async([scrape, render, pages], data, tasks, settings=settings))
        seconds = time.perf_counter() - started
    complete = 0
    for key in tasks:
        status = load_status(data, key) or {}
        i = int(key[1:]) % SCRIPTED_ITEMS
        text = (status.get("pages") or {}).get("text_start") or ""
        complete += int(bool(status.get("render", {}).get("rendered")) and item_name(i) in text)
    peaks = quarter_peaks(memory.samples, n)
    first, last = peaks[0], peaks[-1]
    flat = first is not None and last is not None and last <= FLAT_RATIO * first
    return {
        "pages": n,
        "succeeded": len(done),
        "rendered_with_content": complete,
        "seconds": seconds,
        "pages_per_s": n / seconds,
        "pss_peak_by_quarter_mib": peaks,
        "last_over_first": (last / first) if first and last else None,
        "flat": flat,
        "rss_peak_mib": max((rss for _, rss, _ in memory.samples), default=None),
        "images_requested": site_requests(site_url).get("/app/logo.png", 0),
        "settings": {
            "pages_at_once": settings.render.pages_at_once,
            "pages_per_context": settings.render.pages_per_context,
        },
    }


def measure_auto(n: int, site_url: str, root: Path) -> dict[str, Any]:
    """`n` tasks, half needing a browser, all `render: auto`: what the run rendered."""
    tasks: dict[str, dict[str, Any]] = {}
    for i in range(n):
        if i % 2 == 0:
            url = f"{site_url}/app/item/{i % SCRIPTED_ITEMS}?n={i}"
        else:
            url = f"{site_url}/page/{i % 10}?n={i}"
        tasks[f"a{i:05d}"] = {"url": url, "render": "auto"}
    data = root / "auto"
    started = time.perf_counter()
    asyncio.run(execute_async([scrape, render, pages], data, tasks, settings=ScrapeSettings()))
    seconds = time.perf_counter() - started
    needed_rendered = needed = static_rendered = static = content = 0
    for key in tasks:
        i = int(key[1:])
        status = load_status(data, key) or {}
        rendered = bool((status.get("render") or {}).get("rendered"))
        if i % 2 == 0:
            needed += 1
            needed_rendered += rendered
            text = (status.get("pages") or {}).get("text_start") or ""
            content += item_name(i % SCRIPTED_ITEMS) in text
        else:
            static += 1
            static_rendered += rendered
    return {
        "pages": n,
        "needed_browser": needed,
        "needed_rendered": needed_rendered,
        "needed_with_content": content,
        "static": static,
        "static_rendered": static_rendered,
        "seconds": seconds,
        "pages_per_s": n / seconds,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=2_000)
    parser.add_argument("--auto-pages", type=int, default=1_000, help="render: auto (0: skip)")
    parser.add_argument("--json", metavar="PATH", help="write the figures to PATH as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-render-") as tmp, Site(pages=10) as site:
        result = measure(args.pages, site.url, Path(tmp))
        auto = measure_auto(args.auto_pages, site.url, Path(tmp)) if args.auto_pages else None
    peaks = result["pss_peak_by_quarter_mib"]
    print_table(
        ["figure", "value"],
        [
            ["pages rendered (with their scripts' content)", result["rendered_with_content"]],
            ["pages/s", f"{result['pages_per_s']:.1f}"],
            ["browser tree PSS peak per quarter, MiB", " / ".join(f"{p:.0f}" for p in peaks if p)],
            ["last quarter / first", f"{result['last_over_first']:.2f}"],
            [f"flat (<= {FLAT_RATIO}x)", "PASS" if result["flat"] else "FAIL"],
            ["browser tree RSS peak, MiB", f"{result['rss_peak_mib']:.0f}"],
            ["images requested", result["images_requested"]],
        ],
    )
    if auto is not None:
        print_table(
            ["render: auto", "value"],
            [
                ["pages (half need a browser)", auto["pages"]],
                [
                    "needing a browser: rendered",
                    f"{auto['needed_rendered']} of {auto['needed_browser']}",
                ],
                ["  with their scripts' content", auto["needed_with_content"]],
                ["not needing one: rendered", f"{auto['static_rendered']} of {auto['static']}"],
                ["pages/s (all rendered above)", f"{auto['pages_per_s']:.1f}"],
            ],
        )
    if args.json:
        write_json(args.json, {"machine": machine_info(), "render": result, "auto": auto})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
