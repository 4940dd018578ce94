"""The two sides over the same N pages, each split into S shards (processes) as a sharded run
splits its tasks: ours (`bench.render_peer.shard` per shard) and Crawlee's (`crawl.mjs` in a
Node process per shard), each side's processes sampled together and its pages checked."""

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import lxml.html

from bench.lib.proc_stats import MachineLoad
from bench.lib.repo import PYTHON, REPO
from bench.render_peer.detached_site import DetachedSite
from bench.render_peer.install import NO_DOWNLOADS
from bench.render_peer.processes import NodeRun, running
from bench.render_peer.side_memory import SideMemory
from scrapeflow_dagster.site.content.scripted import SCRIPTED_ITEMS, item_name


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


def _slices(n: int, shards: int) -> list[tuple[int, int]]:
    """Disjoint contiguous (first, count) slices of the N pages, one per shard (as a sharded
    run's plan cuts its partitions)."""
    base, extra = divmod(n, shards)
    slices, first = [], 0
    for shard in range(shards):
        count = base + (1 if shard < extra else 0)
        slices.append((first, count))
        first += count
    return slices


def _run_all(runs: list[NodeRun], timeout: float) -> list[int | None]:
    """Wait for every run (together at most `timeout` seconds); their exit codes."""
    deadline = time.monotonic() + timeout
    codes: list[int | None] = []
    for run in runs:
        try:
            codes.append(run.proc.wait(timeout=max(1.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            codes.append(None)
    return codes


def _tree(runs: list[NodeRun]) -> list[int]:
    return [pid for run in runs for pid in run.pids()]


def _run_measured(
    launches: list[tuple[list[str], Path, dict[str, str], Path]], timeout: float
) -> tuple[list[int | None], float, SideMemory]:
    """Start each `(command, cwd, env, log)` as a process group of its own, their trees
    sampled meanwhile; wait for all (at most `timeout` seconds), then stop every one left.
    Returns their exit codes (None: timed out), the wall seconds and the memory sampled."""
    runs: list[NodeRun] = []
    started = time.perf_counter()
    try:
        with SideMemory(lambda: _tree(runs)) as memory:
            for command, cwd, env, log in launches:
                run = NodeRun(command, cwd, env, log)
                runs.append(run)
                running.append(run)
            codes = _run_all(runs, timeout)
        wall = time.perf_counter() - started
    finally:
        for run in runs:
            run.stop()
            running.remove(run)
    return codes, wall, memory


def run_ours(
    site: DetachedSite,
    n: int,
    root: Path,
    *,
    shards: int = 1,
    chromium: str,
    chromium_args: tuple[str, ...] = (),
    shard_flags: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Our side in `shards` processes (`bench.render_peer.shard`, each as a sharded run's step:
    the engine's chain over its slice, in the data folder they share), their trees sampled
    meanwhile; each stored DOM's `<h1>` checked. Pages/s is N over the slowest shard's chain."""
    data = root / "data"
    site.reset_requests()
    load = MachineLoad()
    site_cpu0 = site.cpu_seconds()
    load.start()
    outs: list[Path] = []
    launches = []
    for shard, (first, count) in enumerate(_slices(n, shards)):
        outs.append(root / f"shard-{shard}.json")
        command = [PYTHON, "-m", "bench.render_peer.shard", str(data), site.url]
        command += [str(first), str(count), str(outs[-1])]
        command += [f"--chromium={chromium}"]
        command += [f"--chromium-arg={arg}" for arg in chromium_args]
        command += shard_flags
        launches.append((command, REPO, dict(os.environ), root / f"shard-{shard}.log"))
    codes, wall, memory = _run_measured(launches, max(600.0, 2.0 * n))
    load.stop()
    if any(code != 0 for code in codes):
        tail = (root / "shard-0.log").read_bytes()[-3000:].decode(errors="replace")
        raise RuntimeError(f"a shard of ours failed (exits {codes}):\n{tail}")
    seconds = max(json.loads(out.read_text())["seconds"] for out in outs)
    right = 0
    for i, url in enumerate(page_urls(site.url, n)):
        dom = data / f"r{i:05d}.render"
        if not dom.exists():
            continue
        headings = lxml.html.fromstring(dom.read_bytes()).xpath("//h1")
        right += int(bool(headings) and headings[0].text_content().strip() == expected_h1(url))
    site_cpu = site.cpu_seconds() - site_cpu0
    return {
        "pages": n,
        "shards": shards,
        "right_h1": right,
        "pages_per_s": n / seconds,
        "seconds": seconds,
        "process_seconds": wall,
        "images_requested": site.requests().get("/app/logo.png", 0),
        "memory": memory.figures(),
        "cpu_seconds": memory.cpu_seconds(),
        "other_busy_cores": _other_cores(load, wall, memory.cpu_seconds() + site_cpu),
    }


def run_crawlee(
    site: DetachedSite, node_dir: Path, n: int, root: Path, *, chromium: str, shards: int = 1
) -> dict[str, Any]:
    """`crawl.mjs` in `shards` Node processes, each over its slice of the N URLs (Crawlee has
    no browser shared between processes), their trees sampled meanwhile; each row's `<h1>`
    checked. Pages/s is N over the slowest process's `crawler.run()`."""
    urls = page_urls(site.url, n)
    env = {
        **os.environ,
        **NO_DOWNLOADS,
        "CRAWLEE_PERSIST_STORAGE": "false",
        "CRAWLEE_PURGE_ON_START": "true",
        "CHROMIUM_PATH": chromium,
    }
    node = shutil.which("node") or "/usr/bin/node"
    site.reset_requests()
    load = MachineLoad()
    site_cpu0 = site.cpu_seconds()
    load.start()
    works: list[Path] = []
    launches = []
    for shard, (first, count) in enumerate(_slices(n, shards)):
        work = root / f"crawlee-{shard}"
        work.mkdir()
        works.append(work)
        (work / "urls.txt").write_text("\n".join(urls[first : first + count]) + "\n")
        command = [node, "crawl.mjs", str(work / "urls.txt"), str(work / "out.jsonl")]
        command.append(str(work / "stats.json"))
        shard_env = {**env, "CRAWLEE_STORAGE_DIR": str(work / "storage")}
        launches.append((command, node_dir, shard_env, work / "node.log"))
    codes, wall, memory = _run_measured(launches, max(600.0, 2.0 * n))
    load.stop()
    if any(code != 0 for code in codes) or not all((w / "stats.json").exists() for w in works):
        tail = (works[0] / "node.log").read_bytes()[-3000:].decode(errors="replace")
        raise RuntimeError(f"the Crawlee peer failed (exits {codes}):\n{tail}")
    stats = [json.loads((work / "stats.json").read_text()) for work in works]
    rows = [
        json.loads(line)
        for work in works
        for line in (work / "out.jsonl").read_text().splitlines()
        if line.strip()
    ]
    wanted = {url: expected_h1(url) for url in urls}
    seen: set[str] = set()
    right = 0
    for row in rows:
        url = row.get("url")
        if url in wanted and url not in seen and row.get("h1") == wanted[url]:
            right += 1
        seen.add(url)
    seconds = max(stat["seconds"] for stat in stats)
    site_cpu = site.cpu_seconds() - site_cpu0
    return {
        "pages": n,
        "shards": shards,
        "right_h1": right,
        "rows": len(rows),
        "errors": [row for row in rows if row.get("error")][:5],
        "pages_per_s": n / seconds,
        "seconds": seconds,
        "process_seconds": wall,
        "images_requested": site.requests().get("/app/logo.png", 0),
        "memory": memory.figures(),
        "cpu_seconds": memory.cpu_seconds(),
        "other_busy_cores": _other_cores(load, wall, memory.cpu_seconds() + site_cpu),
        "concurrency": [stat.get("concurrency") for stat in stats],
        "crawlee_stats": [
            {
                k: stat.get("crawlee", {}).get(k)
                for k in ("requestsFinished", "requestsFailed", "retryHistogram", "requestsTotal")
            }
            for stat in stats
        ],
        "log_tail": (works[0] / "node.log").read_bytes()[-1500:].decode(errors="replace"),
    }
