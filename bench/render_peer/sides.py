"""The two sides over the same N pages: ours (`bench_render.measure` in this process) and
Crawlee's (`crawl.mjs` in a Node subprocess), each sampled meanwhile and its pages checked."""

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import lxml.html

from bench.bench_render import measure
from bench.lib.proc_stats import MachineLoad, descendants
from bench.render_peer.detached_site import DetachedSite
from bench.render_peer.install import NO_DOWNLOADS
from bench.render_peer.processes import NodeRun, running
from bench.render_peer.side_memory import SideMemory
from scrapeflow_dagster.site.content.scripted import SCRIPTED_ITEMS, item_name

CHROMIUM = "/usr/bin/chromium"


def page_urls(site_url: str, n: int) -> list[str]:
    """The N URLs both sides render (as `bench_render.measure` builds them)."""
    return [f"{site_url}/app/item/{i % SCRIPTED_ITEMS}?n={i}" for i in range(n)]


def expected_h1(url: str) -> str:
    """What the `<h1>` of `url` reads once its script ran."""
    path = url.split("?", 1)[0]
    return item_name(int(path.rsplit("/", 1)[1]))


def _other_cores(load: MachineLoad, seconds: float, own_cpu: float) -> float | None:
    if load.busy_seconds is None or seconds <= 0:
        return None
    return max(0.0, (load.busy_seconds - own_cpu) / seconds)


def run_ours(site: DetachedSite, n: int, root: Path) -> dict[str, Any]:
    """`bench_render.measure` in this process, this process's tree sampled meanwhile; each
    stored DOM's `<h1>` checked."""
    me = os.getpid()
    site.reset_requests()
    load = MachineLoad()
    site_cpu0 = site.cpu_seconds()
    cpu0 = sum(os.times()[:2])
    load.start()
    started = time.perf_counter()
    with SideMemory(lambda: descendants(me)) as memory:
        result = measure(n, site.url, root)
    wall = time.perf_counter() - started
    load.stop()
    own_cpu = sum(os.times()[:2]) - cpu0
    side_cpu = own_cpu + memory.cpu_seconds(exclude=me)
    site_cpu = site.cpu_seconds() - site_cpu0
    right = 0
    for i, url in enumerate(page_urls(site.url, n)):
        dom = root / "data" / f"r{i:05d}.render"
        if not dom.exists():
            continue
        headings = lxml.html.fromstring(dom.read_bytes()).xpath("//h1")
        right += int(bool(headings) and headings[0].text_content().strip() == expected_h1(url))
    return {
        "pages": n,
        "right_h1": right,
        "pages_per_s": result["pages_per_s"],
        "seconds": result["seconds"],
        "images_requested": result["images_requested"],
        "memory": memory.figures(),
        "cpu_seconds": side_cpu,
        "other_busy_cores": _other_cores(load, wall, side_cpu + site_cpu),
        "measure": result,
    }


def run_crawlee(site: DetachedSite, node_dir: Path, n: int, root: Path) -> dict[str, Any]:
    """`crawl.mjs` over the N URLs in a Node subprocess, its tree sampled meanwhile; each
    row's `<h1>` checked."""
    urls = page_urls(site.url, n)
    work = root / "crawlee"
    work.mkdir()
    (work / "urls.txt").write_text("\n".join(urls) + "\n")
    out, stats_path, log = work / "out.jsonl", work / "stats.json", work / "node.log"
    env = {
        **os.environ,
        **NO_DOWNLOADS,
        "CRAWLEE_STORAGE_DIR": str(work / "storage"),
        "CRAWLEE_PERSIST_STORAGE": "false",
        "CRAWLEE_PURGE_ON_START": "true",
        "CHROMIUM_PATH": CHROMIUM,
    }
    node = shutil.which("node") or "/usr/bin/node"
    command = [node, "crawl.mjs", str(work / "urls.txt"), str(out), str(stats_path)]
    site.reset_requests()
    load = MachineLoad()
    site_cpu0 = site.cpu_seconds()
    load.start()
    started = time.perf_counter()
    run = NodeRun(command, node_dir, env, log)
    running.append(run)
    try:
        with SideMemory(run.pids) as memory:
            try:
                returncode = run.proc.wait(timeout=max(600.0, 2.0 * n))
            except subprocess.TimeoutExpired:
                returncode = None
        wall = time.perf_counter() - started
    finally:
        run.stop()
        running.remove(run)
    load.stop()
    if returncode != 0 or not stats_path.exists():
        tail = log.read_bytes()[-3000:].decode(errors="replace")
        raise RuntimeError(f"the Crawlee peer failed (exit {returncode}):\n{tail}")
    stats = json.loads(stats_path.read_text())
    rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    wanted = {url: expected_h1(url) for url in urls}
    seen: set[str] = set()
    right = 0
    for row in rows:
        url = row.get("url")
        if url in wanted and url not in seen and row.get("h1") == wanted[url]:
            right += 1
        seen.add(url)
    site_cpu = site.cpu_seconds() - site_cpu0
    return {
        "pages": n,
        "right_h1": right,
        "rows": len(rows),
        "errors": [row for row in rows if row.get("error")][:5],
        "pages_per_s": n / stats["seconds"],
        "seconds": stats["seconds"],
        "process_seconds": wall,
        "images_requested": site.requests().get("/app/logo.png", 0),
        "memory": memory.figures(),
        "cpu_seconds": memory.cpu_seconds(),
        "other_busy_cores": _other_cores(load, wall, memory.cpu_seconds() + site_cpu),
        "concurrency": stats.get("concurrency"),
        "crawlee_stats": {
            k: stats.get("crawlee", {}).get(k)
            for k in ("requestsFinished", "requestsFailed", "retryHistogram", "requestsTotal")
        },
        "log_tail": log.read_bytes()[-1500:].decode(errors="replace"),
    }
