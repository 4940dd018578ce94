"""Rendering, ours against Crawlee's PlaywrightCrawler on the same script-built pages, side by
side in one run (issue 44's peer): pages per second and peak memory of each side's processes.

    .venv/bin/python -m bench.bench_render_peer                      # 500 pages, 1 round
    .venv/bin/python -m bench.bench_render_peer --pages 200 --rounds 2 --json r.json

The bundled site (`Site(pages=10)`) runs in a process of its own, held by a helper that is
re-parented away from this process: it is in neither side's process tree. Both sides render the
same N URLs `/app/item/{i % 12}?n={i}` (each a shell whose script fetches its JSON and writes
the `<h1>` "Scripted item i" and its links; its image `/app/logo.png` should be blocked):

- ours: `bench.bench_render.measure` in this process (the engine's chain `scrape`, `render`,
  `pages`, with the shipped render settings: 4 pages at once); pages/s is N over the chain's
  run, browser start and teardown included.
- Crawlee: `bench/peers/crawlee_render/crawl.mjs`, a PlaywrightCrawler (maxConcurrency 4, its
  autoscaling otherwise as it ships: it starts at 1 page and grows; images, fonts and media
  blocked by URL pattern; each page awaited until its `<h1>`; storage in memory) in a Node
  subprocess; pages/s is N over `crawler.run()`, browser start and teardown included (the
  process's wall time, Node's start too, is shown apart). Crawlee 3 and Playwright (versions
  pinned in its `package.json`) are installed once by this benchmark with npm (install scripts
  off, no browser downloaded) into `--node-dir` (default `/var/tmp/scrapeflow-bench-crawlee`),
  reused while `package.json` is unchanged. Both sides drive the system's `/usr/bin/chromium`.

While each side runs, a thread here samples every 0.5 s the summed RSS and PSS
(/proc/<pid>/smaps_rollup) of that side's whole process tree: ours is this process (the engine,
Playwright's Python client) with Playwright's Node driver and every Chromium process below it;
Crawlee's is its Node process and every Chromium process below it. The peaks of those sums are
the figures compared (ours thus counts this benchmark's own few MiB too; `measure`'s figures of
the browser's tree alone are in the JSON); the Chromium processes' share of each is shown
apart. Crawlee's Node process is stopped with SIGTERM, then SIGKILL to its tree and to
Chromium's process groups after 5 s (on SIGTERM Playwright closes the browser but Crawlee
keeps retrying, so it does not end by itself). Each side's pages
are then checked the same way: a page counts when its `<h1>` reads "Scripted item i" (ours:
from the DOM stored as `<key>.render`; Crawlee's: the row its crawler wrote), and the site's
count of `/app/logo.png` requests is shown per side. With `--rounds` > 1 the sides alternate
which runs first; pages/s is the median over rounds, memory the highest peak.

Printed: per side pages, pages with the right `<h1>`, pages/s, peak PSS and RSS (MiB), the
Chromium share, images requested; then ours / Crawlee for pages/s and for peak PSS and RSS, and
the issue's goal (pages/s ratio >= 1 with peak PSS ratio <= 0.5) as PASS or FAIL, nothing
asserted. The machine may be shared: the cores other processes kept busy meanwhile are shown.
Every process started here (the site and its helper, Node and its Chromium) is stopped on
exit, on Ctrl-C and on SIGTERM.
"""

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import lxml.html

from bench.bench_chain_scale import smaps_rollup_kib
from bench.bench_render import SAMPLE_SECONDS, measure
from bench.lib.polling import Poller
from bench.lib.proc_stats import MachineLoad, cmdline, descendants, proc_cpu_seconds
from bench.lib.repo import PYTHON, REPO
from bench.lib.report import machine_info, print_table, write_json
from scrapeflow_dagster.site.content.scripted import SCRIPTED_ITEMS, item_name

PEER = REPO / "bench" / "peers" / "crawlee_render"
DEFAULT_NODE_DIR = Path("/var/tmp/scrapeflow-bench-crawlee")
CHROMIUM = "/usr/bin/chromium"
# The goal: at least Crawlee's pages/s at no more than half its memory.
GOAL_SPEED_RATIO = 1.0
GOAL_MEMORY_RATIO = 0.5
# Nothing here may fetch a browser, whatever a package's defaults.
NO_DOWNLOADS = {
    "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
    "PUPPETEER_SKIP_DOWNLOAD": "1",
    "PUPPETEER_SKIP_CHROMIUM_DOWNLOAD": "1",
}


# -- the peer's installation ------------------------------------------------------------------


def install_peer(node_dir: Path) -> dict[str, str]:
    """Crawlee's side installed in `node_dir` (npm, install scripts off, no browser), reused
    while `package.json` is unchanged; `crawl.mjs` copied there on every run (Node resolves
    its imports from the script's folder). The installed versions."""
    manifest = (PEER / "package.json").read_bytes()
    wanted = hashlib.sha256(manifest).hexdigest()
    stamp = node_dir / ".installed"
    node_dir.mkdir(parents=True, exist_ok=True)
    installed = stamp.exists() and stamp.read_text() == wanted
    if not (installed and (node_dir / "node_modules").is_dir()):
        print(f"installing the Crawlee peer into {node_dir} (npm)", flush=True)
        stamp.unlink(missing_ok=True)
        shutil.rmtree(node_dir / "node_modules", ignore_errors=True)
        (node_dir / "package-lock.json").unlink(missing_ok=True)
        (node_dir / "package.json").write_bytes(manifest)
        npm = shutil.which("npm") or "/usr/bin/npm"
        env = {**os.environ, **NO_DOWNLOADS, "npm_config_update_notifier": "false"}
        command = [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts"]
        subprocess.run(command, cwd=node_dir, env=env, check=True)
        stamp.write_text(wanted)
    shutil.copyfile(PEER / "crawl.mjs", node_dir / "crawl.mjs")
    versions = {}
    for package in ("crawlee", "playwright"):
        meta = json.loads((node_dir / "node_modules" / package / "package.json").read_text())
        versions[package] = meta["version"]
    node = shutil.which("node") or "/usr/bin/node"
    versions["node"] = subprocess.run(
        [node, "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    return versions


# -- the site, outside both trees -------------------------------------------------------------

# The helper forks and its first process exits: the helper left is re-parented away from this
# process, so neither side's tree holds the site. It stops the site when told (SIGTERM) or when
# its stdin closes (this process ended, however).
_SITE_HOLDER = """
import os, signal, sys
if os.fork():
    os._exit(0)
def stop(*_):
    raise SystemExit(0)
signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
from bench.lib.site import Site
with Site(pages=10) as site:
    print(os.getpid(), site.proc.pid, site.url, flush=True)
    sys.stdin.read()
"""


class DetachedSite:
    """The bundled site (`Site(pages=10)`) held by a helper outside this process's tree."""

    def __init__(self) -> None:
        self.url = ""
        self.holder_pid: int | None = None
        self.site_pid: int | None = None
        self._launcher: subprocess.Popen[str] | None = None

    def __enter__(self) -> "DetachedSite":
        self._launcher = subprocess.Popen(
            [PYTHON, "-c", _SITE_HOLDER],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert self._launcher.stdout is not None
        line = self._launcher.stdout.readline().split()
        self._launcher.wait(timeout=30)
        if len(line) != 3 or not line[2].startswith("http://"):
            self._stop()
            raise RuntimeError("the local site did not start")
        self.holder_pid, self.site_pid, self.url = int(line[0]), int(line[1]), line[2]
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def _stop(self) -> None:
        if self._launcher is None:
            return
        if self.holder_pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.holder_pid, signal.SIGTERM)
        if self._launcher.stdin is not None:
            with contextlib.suppress(OSError):
                self._launcher.stdin.close()  # the holder's stdin: closed, it stops too
        if self._launcher.stdout is not None:
            self._launcher.stdout.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._launcher.wait(timeout=10)
        for pid in (self.holder_pid, self.site_pid):
            if pid is not None and not _wait_gone(pid, 15):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        self._launcher = None

    def cpu_seconds(self) -> float:
        return (proc_cpu_seconds(self.site_pid) or 0.0) if self.site_pid else 0.0

    def requests(self) -> dict[str, int]:
        with urllib.request.urlopen(self.url + "/control/requests", timeout=30) as answer:
            paths: dict[str, int] = json.loads(answer.read())["paths"]
        return paths

    def reset_requests(self) -> None:
        request = urllib.request.Request(self.url + "/control/requests/reset", method="POST")
        urllib.request.urlopen(request, timeout=30).close()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


# -- memory of a side's tree ------------------------------------------------------------------


class SideMemory(Poller):
    """Every `SAMPLE_SECONDS` in a thread: the summed RSS and PSS (MiB) of the processes
    `pids()` names, and of those among them that are Chromium's; their peaks, and the CPU
    seconds the processes seen had used when last seen."""

    def __init__(self, pids: Callable[[], list[int]]) -> None:
        self.pids = pids
        self.samples = 0
        self.peak_rss_mib = 0.0
        self.peak_pss_mib = 0.0
        self.peak_chromium_rss_mib = 0.0
        self.peak_chromium_pss_mib = 0.0
        self.processes_seen: set[int] = set()
        self._cpu: dict[int, float] = {}
        self._chromium: dict[int, bool] = {}
        super().__init__()

    def _is_chromium(self, pid: int) -> bool:
        known = self._chromium.get(pid)
        if known is None:
            known = "chromium" in cmdline(pid)
            self._chromium[pid] = known
        return known

    def sample(self) -> None:
        rss = pss = chromium_rss = chromium_pss = 0
        for pid in self.pids():
            figures = smaps_rollup_kib(pid)
            if not figures:
                continue
            self.processes_seen.add(pid)
            rss += figures.get("Rss", 0)
            pss += figures.get("Pss", 0)
            if self._is_chromium(pid):
                chromium_rss += figures.get("Rss", 0)
                chromium_pss += figures.get("Pss", 0)
            cpu = proc_cpu_seconds(pid)
            if cpu is not None:
                self._cpu[pid] = cpu
        self.samples += 1
        self.peak_rss_mib = max(self.peak_rss_mib, rss / 1024)
        self.peak_pss_mib = max(self.peak_pss_mib, pss / 1024)
        self.peak_chromium_rss_mib = max(self.peak_chromium_rss_mib, chromium_rss / 1024)
        self.peak_chromium_pss_mib = max(self.peak_chromium_pss_mib, chromium_pss / 1024)

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            self.sample()

    def cpu_seconds(self, exclude: int | None = None) -> float:
        """CPU seconds of the processes seen (but `exclude`), as last sampled."""
        return sum(cpu for pid, cpu in self._cpu.items() if pid != exclude)

    def figures(self) -> dict[str, Any]:
        return {
            "peak_pss_mib": self.peak_pss_mib,
            "peak_rss_mib": self.peak_rss_mib,
            "peak_chromium_pss_mib": self.peak_chromium_pss_mib,
            "peak_chromium_rss_mib": self.peak_chromium_rss_mib,
            "samples": self.samples,
            "processes_seen": len(self.processes_seen),
        }


# -- the two sides ----------------------------------------------------------------------------


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


class NodeRun:
    """`node crawl.mjs ...` in a session of its own; `stop()` ends it and every process below
    it (Chromium runs in process groups of its own), whatever state it is in."""

    def __init__(self, command: list[str], cwd: Path, env: dict[str, str], log: Path) -> None:
        self._log = log.open("wb")
        self.proc = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.tree: set[int] = {self.proc.pid}

    def pids(self) -> list[int]:
        found = descendants(self.proc.pid)
        self.tree.update(found)
        return found

    def stop(self) -> None:
        """SIGTERM to Node's group (Playwright closes its browsers on it), then SIGKILL to
        whatever of its tree and their groups is left after 5 s."""
        if self.proc.poll() is None:
            self.pids()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        left = [pid for pid in self.tree if _alive(pid)]
        groups = set()
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                groups.add(os.getpgid(pid))
        for group in groups:
            if group != os.getpgrp():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(group, signal.SIGKILL)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._log.close()


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
    _running.append(run)
    try:
        with SideMemory(run.pids) as memory:
            try:
                returncode = run.proc.wait(timeout=max(600.0, 2.0 * n))
            except subprocess.TimeoutExpired:
                returncode = None
        wall = time.perf_counter() - started
    finally:
        run.stop()
        _running.remove(run)
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


# -- cleanup on signals -----------------------------------------------------------------------

_running: list[NodeRun] = []


class Stopped(KeyboardInterrupt):
    """SIGTERM, handled as Ctrl-C; `signum` for the exit status."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum


@contextlib.contextmanager
def stopped_on_signals() -> Iterator[None]:
    """SIGTERM handled as Ctrl-C (KeyboardInterrupt), so every `finally` below stops what it
    started; any Node run still going is stopped on the way out."""

    def interrupt(signum: int, _frame: object) -> None:
        raise Stopped(signum)

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        for run in list(_running):
            run.stop()
        signal.signal(signal.SIGTERM, previous)


# -- the report -------------------------------------------------------------------------------


def summarise(rounds: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """Per side: median pages/s, highest peaks, fewest right pages; ours / Crawlee."""
    sides: dict[str, dict[str, Any]] = {}
    for side in ("ours", "crawlee"):
        runs = [r[side] for r in rounds]
        sides[side] = {
            "pages": runs[0]["pages"],
            "right_h1": min(run["right_h1"] for run in runs),
            "pages_per_s": statistics.median(run["pages_per_s"] for run in runs),
            "peak_pss_mib": max(run["memory"]["peak_pss_mib"] for run in runs),
            "peak_rss_mib": max(run["memory"]["peak_rss_mib"] for run in runs),
            "peak_chromium_pss_mib": max(run["memory"]["peak_chromium_pss_mib"] for run in runs),
            "images_requested": max(run["images_requested"] for run in runs),
            "other_busy_cores": max((run["other_busy_cores"] or 0.0) for run in runs),
        }
    ours, theirs = sides["ours"], sides["crawlee"]
    speed = ours["pages_per_s"] / theirs["pages_per_s"]
    pss = ours["peak_pss_mib"] / theirs["peak_pss_mib"] if theirs["peak_pss_mib"] else None
    rss = ours["peak_rss_mib"] / theirs["peak_rss_mib"] if theirs["peak_rss_mib"] else None
    goal = speed >= GOAL_SPEED_RATIO and pss is not None and pss <= GOAL_MEMORY_RATIO
    return {
        **sides,
        "pages_per_s_ratio": speed,
        "peak_pss_ratio": pss,
        "peak_rss_ratio": rss,
        "goal": goal,
    }


def print_report(summary: dict[str, Any], versions: dict[str, str], rounds: int) -> None:
    ours, theirs = summary["ours"], summary["crawlee"]

    def row(label: str, field: str, whole: bool = False) -> list[Any]:
        if whole:
            return [label, round(ours[field]), round(theirs[field])]
        return [label, ours[field], theirs[field]]

    print_table(
        ["figure", "ours", "crawlee"],
        [
            row("pages", "pages"),
            row("pages with the right <h1>", "right_h1"),
            row("pages/s", "pages_per_s"),
            row("peak PSS, MiB (whole side)", "peak_pss_mib", whole=True),
            row("peak RSS, MiB (whole side)", "peak_rss_mib", whole=True),
            row("  of which Chromium: peak PSS, MiB", "peak_chromium_pss_mib", whole=True),
            row("images requested", "images_requested"),
            row("other busy cores (shared machine)", "other_busy_cores"),
        ],
        title=(
            f"rendering {ours['pages']:,} script-built pages: ours vs Crawlee "
            f"{versions['crawlee']} (Playwright {versions['playwright']}, Node "
            f"{versions['node']}), {rounds} round{'s' if rounds > 1 else ''}"
        ),
    )
    pss = summary["peak_pss_ratio"]
    rss = summary["peak_rss_ratio"]
    print(f"pages/s ours / crawlee:  {summary['pages_per_s_ratio']:.2f} (goal >= 1)")
    print(f"peak PSS ours / crawlee: {pss:.2f} (goal <= 0.5)" if pss else "peak PSS: -")
    print(f"peak RSS ours / crawlee: {rss:.2f}" if rss else "peak RSS: -")
    print(f"goal (pages/s ratio >= 1 at PSS ratio <= 0.5): {'PASS' if summary['goal'] else 'FAIL'}")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json", metavar="PATH", help="write the figures to PATH as JSON")
    parser.add_argument(
        "--node-dir",
        type=Path,
        default=DEFAULT_NODE_DIR,
        help=f"where the Crawlee peer is installed (default {DEFAULT_NODE_DIR})",
    )
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing (on Debian: apt-get install chromium)")
    versions = install_peer(args.node_dir)
    rounds: list[dict[str, dict[str, Any]]] = []
    with (
        stopped_on_signals(),
        tempfile.TemporaryDirectory(prefix="bench-render-peer-") as tmp,
        DetachedSite() as site,
    ):
        for r in range(args.rounds):
            order = ("ours", "crawlee") if r % 2 == 0 else ("crawlee", "ours")
            found: dict[str, dict[str, Any]] = {}
            for side in order:
                root = Path(tmp) / f"{side}-{r}"
                root.mkdir()
                if side == "ours":
                    found[side] = run_ours(site, args.pages, root)
                else:
                    found[side] = run_crawlee(site, args.node_dir, args.pages, root)
                shown = {k: v for k, v in found[side].items() if k not in ("measure", "log_tail")}
                print(f"round {r}: {side}: {json.dumps(shown, default=str)}", flush=True)
                shutil.rmtree(root, ignore_errors=True)
            rounds.append(found)
    summary = summarise(rounds)
    print_report(summary, versions, args.rounds)
    write_json(
        args.json,
        {"machine": machine_info(), "versions": versions, "summary": summary, "rounds": rounds},
    )
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except KeyboardInterrupt as stop:
        print(f"\ninterrupted ({stop}); everything started here was stopped", file=sys.stderr)
        raise SystemExit(128 + getattr(stop, "signum", signal.SIGINT)) from None
