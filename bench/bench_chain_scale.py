"""The whole chain over 10,000 and 100,000 tasks in one run (1,000,000 with --million), on the
embedded defaults: issue 42's scale targets.

    .venv/bin/python -m bench.bench_chain_scale                   # 10k and 100k
    .venv/bin/python -m bench.bench_chain_scale --million --tmp-dir /var/tmp --json scale.json
    .venv/bin/python -m bench.bench_chain_scale --sizes 2000      # a quick check (~1 min)

Each size gets a fresh folder (under --tmp-dir, the system's temp by default; --keep keeps it)
holding the home `scrapeflow home init` writes (SQLite), a data folder and a working folder:
every command runs from there, never from the repo (Dagster reads `.env` from the working
directory). With the bundled site serving the N pages:

  add      `python -m scrapeflow_dagster.cli tasks add tasks.txt` (N URLs);
  run      one `dagster asset materialize -m scrapeflow_dagster.definitions --select
           scrape,validation,pages --partition-range first...last` (the location's own
           executor): wall seconds and tasks/s, and the seconds from the command's start to
           the first `/page/N` the site served (its request counts, `GET /control/requests`,
           polled every 50 ms until a page shows; the first request of any kind too, which
           is robots.txt);
  exact    the run a success, every partition of the three assets materialised (instance
           queries), `scrapeflow status` showing N SUCCESS per asset and nothing else, and (up
           to 100,000 tasks) every page requested exactly once (the site's counts);
  sizes    the Dagster home's bytes per task (what the run added, and the whole home) and the
           data folder's, apparent and allocated (du);
  status   `python -m scrapeflow_dagster.cli status` after the run, --status-rounds times.

Memory of the add's and of the run's process trees: each process's peak RSS (VmHWM, sampled),
the sum of those peaks (an upper bound: peaks of different moments, and pages a forked step
shares with its forkserver counted in both), and the tree's RSS and PSS summed at one moment
(/proc/<pid>/smaps_rollup, every 0.5 s) at their highest.

Targets printed (PASS or FAIL, nothing asserted): tasks/s at the largest size >= 0.9x tasks/s
at 10,000 (at the smallest size when 10,000 is not run); each tree's summed peak RSS < 1 GiB;
first page < 30 s; the home's growth in the run <= 3 KB per task; status < 5 s (slowest round);
exact states. Disk: the data folder keeps every body (20 KB pages by default, --page-bytes);
data and home take about 33 KB per task (measured at 2,000), some 33 GB at 1,000,000 tasks.
"""

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from bench.bench_status import table_of
from bench.dagster.cli_runs import OURS_MODULE, cleanup, materialize_cmd, write_tasks
from bench.dagster.event_log import open_instance
from bench.lib.homes import bench_env, make_home, temp_root
from bench.lib.measured import Measured, run_measured
from bench.lib.polling import Poller
from bench.lib.proc_stats import descendants
from bench.lib.repo import PYTHON
from bench.lib.report import machine_info, print_table, write_json
from bench.lib.site import Site
from scrapeflow_dagster.engine.history.counting.status_labels import value_label

CHAIN = ("scrape", "validation", "pages")
MILLION = 1_000_000
BASELINE_TASKS = 10_000  # the size tasks/s is compared against (issue 42: "flat from 10k")
RATE_RATIO_TARGET = 0.9
TREE_RSS_TARGET_MIB = 1024.0
FIRST_PAGE_TARGET_SECONDS = 30.0
HOME_TARGET_BYTES_PER_TASK = 3 * 1024
STATUS_TARGET_SECONDS = 5.0
# Above this the site's request counts (a JSON of every path) cost more than they tell.
REQUESTS_CHECK_MAX_TASKS = 100_000
FIRST_PAGE_POLL_SECONDS = 0.05
MEMORY_SAMPLE_SECONDS = 0.5


class FirstPage(Poller):
    """Polls the site's request counts in a thread until a `/page/N` shows; the seconds from
    `t0` (perf_counter, taken just before the command starts) to the first request and page."""

    def __init__(self, site_url: str, t0: float) -> None:
        self.url = site_url + "/control/requests"
        self.t0 = t0
        self.first_request_seconds: float | None = None
        self.first_page_seconds: float | None = None
        super().__init__()

    def _run(self) -> None:
        while not self._stop.is_set() and self.first_page_seconds is None:
            try:
                with urllib.request.urlopen(self.url, timeout=5) as response:
                    paths: dict[str, int] = json.loads(response.read())["paths"]
            except (OSError, urllib.error.URLError, ValueError, KeyError):
                paths = {}  # a poll the busy site did not answer in time: the next one will
            seen = time.perf_counter() - self.t0
            if paths and self.first_request_seconds is None:
                self.first_request_seconds = seen
            if any(path.startswith("/page/") for path in paths):
                self.first_page_seconds = seen
            self._stop.wait(FIRST_PAGE_POLL_SECONDS)


def smaps_rollup_kib(pid: int) -> dict[str, int]:
    """Rss and Pss (KiB) of process `pid` from /proc/<pid>/smaps_rollup ({} once it is gone)."""
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name in ("Rss", "Pss"):
                    out[name] = int(rest.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return out


class TreeMemory(Poller):
    """The summed RSS and PSS of this process's descendants (but `exclude`), sampled together in
    a thread; their highest values. Descendants, not one root's tree: the measured command runs
    in a session of its own and what it orphans is re-parented here (`run_measured` makes this
    process their subreaper)."""

    def __init__(self, exclude: Sequence[int]) -> None:
        self.exclude = {os.getpid(), *exclude}
        self.peak_rss_mib: float | None = None
        self.peak_pss_mib: float | None = None
        # When the PSS peak came (seconds from the start) and each process's share of it.
        self.peak_pss_seconds: float | None = None
        self.peak_pss_parts: list[dict[str, Any]] = []
        self._started = time.perf_counter()
        super().__init__()

    def _run(self) -> None:
        while not self._stop.is_set():
            rss = pss = 0
            parts = []
            for pid in descendants(os.getpid()):
                if pid in self.exclude:
                    continue
                rollup = smaps_rollup_kib(pid)
                if "Pss" in rollup:
                    rss += rollup.get("Rss", 0)
                    pss += rollup["Pss"]
                    parts.append({"pid": pid, "pss_mib": rollup["Pss"] / 1024, "cmd": _cmd(pid)})
            if parts:
                self.peak_rss_mib = max(self.peak_rss_mib or 0.0, rss / 1024)
                if pss / 1024 > (self.peak_pss_mib or 0.0):
                    self.peak_pss_mib = pss / 1024
                    self.peak_pss_seconds = time.perf_counter() - self._started
                    self.peak_pss_parts = sorted(parts, key=lambda p: -p["pss_mib"])
            self._stop.wait(MEMORY_SAMPLE_SECONDS)


def _cmd(pid: int) -> str:
    """The first 80 characters of `pid`'s command line ('' once it is gone)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace")[:80]


def tree_figures(m: Measured, memory: TreeMemory) -> dict[str, Any]:
    """Wall time and the memory figures of one measured command's process tree."""
    largest = max(m.processes, key=lambda p: p.peak_rss_mib, default=None)
    return {
        "seconds": m.seconds,
        "cpu_seconds": m.cpu_seconds,
        "returncode": m.returncode,
        "largest_peak_rss_mib": largest.peak_rss_mib if largest else None,
        "largest_role": largest.role if largest else None,
        # An upper bound of the tree's peak: each process's own peak, whenever it was.
        "tree_sum_peak_rss_mib": sum(p.peak_rss_mib for p in m.processes) or None,
        "tree_concurrent_rss_mib": memory.peak_rss_mib,
        "tree_concurrent_pss_mib": memory.peak_pss_mib,
        "tree_pss_peak_seconds": memory.peak_pss_seconds,
        "tree_pss_peak_parts": memory.peak_pss_parts,
        "wait4_peak_rss_mib": m.tree_peak_rss_mib,
        # What the tree's processes wrote to storage (file data; a process's last sample).
        "disk_write_bytes": sum(p.write_bytes or 0 for p in m.processes),
        "other_busy_cores": m.other_busy_cores,
        "roles": m.roles,
        "processes": [
            {
                "role": p.role,
                "peak_rss_mib": p.peak_rss_mib,
                "write_bytes": p.write_bytes,
                "cmdline": p.cmdline[:160],
            }
            for p in m.processes
        ],
    }


def du_bytes(path: Path) -> dict[str, int]:
    """`path`'s bytes: apparent (file sizes) and allocated (disk blocks), as du counts them."""
    out: dict[str, int] = {}
    for name, flags in (("apparent", ["--apparent-size"]), ("allocated", [])):
        done = subprocess.run(
            ["du", "-s", "-B1", *flags, str(path)], capture_output=True, text=True, check=True
        )
        out[name] = int(done.stdout.split()[0])
    return out


def post(url: str) -> None:
    request = urllib.request.Request(url, data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=30):
        pass


def page_requests(site_url: str, n: int) -> dict[str, Any]:
    """How many of the N pages the site served, and how many more than once."""
    with urllib.request.urlopen(site_url + "/control/requests", timeout=300) as response:
        paths: dict[str, int] = json.loads(response.read())["paths"]
    pages = {p: c for p, c in paths.items() if p.startswith("/page/")}
    return {
        "pages_requested": len(pages),
        "pages_requested_again": sum(1 for c in pages.values() if c > 1),
        "pages_all_once": len(pages) == n and all(c == 1 for c in pages.values()),
        "other_paths": {p: c for p, c in paths.items() if not p.startswith("/page/")},
    }


def materialised(home: Path, keys: list[str]) -> dict[str, Any]:
    """The latest run's status and Dagster's timing of it, and per asset how many of `keys`
    are materialised (and how many partitions that are not among them)."""
    import dagster as dg

    wanted = set(keys)
    out: dict[str, Any] = {"assets": {}}
    with open_instance(home) as instance:
        records = instance.get_run_records(limit=1)
        if records:
            record = records[0]
            out["run_status"] = record.dagster_run.status.value
            if record.start_time is not None and record.end_time is not None:
                out["run_seconds"] = record.end_time - record.start_time
        for asset in CHAIN:
            done = instance.get_materialized_partitions(dg.AssetKey(asset))
            out["assets"][asset] = {
                "materialized": len(done & wanted),
                "missing": len(wanted - done),
                "extra": len(done - wanted),
            }
    out["all_materialized"] = all(
        a["missing"] == 0 and a["extra"] == 0 for a in out["assets"].values()
    )
    return out


def status_exact(output: str, n: int) -> bool | None:
    """Whether `scrapeflow status` printed N SUCCESS for each asset of the chain and nothing
    else (None when its table cannot be read)."""
    try:
        table = table_of(output)
    except (IndexError, ValueError):
        return None
    return table == {(value_label("SUCCESS"), asset): n for asset in CHAIN}


def measure_status(env: dict[str, str], cwd: Path, rounds: int) -> dict[str, Any]:
    """`scrapeflow status` through the CLI, `rounds` times: seconds, peak RSS, its table."""
    command = [PYTHON, "-m", "scrapeflow_dagster.cli", "status"]
    runs = [
        # Sampled every 20 ms: a command of a second would slip between 200 ms samples.
        run_measured(
            command,
            env=env,
            label="scrapeflow status",
            cwd=cwd,
            timeout=3600,
            check=False,
            sample_interval=0.02,
        )
        for _ in range(rounds)
    ]
    peaks = [p.peak_rss_mib for run in runs for p in run.processes]
    return {
        "all_seconds": [run.seconds for run in runs],
        "median_seconds": statistics.median(run.seconds for run in runs),
        "worst_seconds": max(run.seconds for run in runs),
        "peak_rss_mib": max(peaks, default=None),
        "returncodes": [run.returncode for run in runs],
        "output": runs[0].stdout_tail.strip(),
    }


def _timeout(n: int, per_task: float) -> float:
    # Generous: a timeout should only ever end a stuck command, never a slow shared machine.
    return max(1800.0, per_task * n)


def measure_size(root: Path, n: int, args: argparse.Namespace) -> dict[str, Any]:
    """Add N tasks, run the chain over them once, check and size what it left; the figures."""
    sub = root / f"chain-{n}"
    cwd = sub / "cwd"  # Dagster reads .env from the working directory: never the repo's
    cwd.mkdir(parents=True)
    home = make_home(sub, "home", ours=True)
    data = sub / "data"
    env = bench_env(home, data)
    result: dict[str, Any] = {"tasks": n}
    with Site(pages=n, page_bytes=args.page_bytes) as site:
        assert site.proc is not None
        tasks_file, _keys_file, keys = write_tasks(sub, site.url, n)
        add_cmd = [PYTHON, "-m", "scrapeflow_dagster.cli", "tasks", "add", str(tasks_file)]
        with TreeMemory(exclude=[site.proc.pid]) as memory:
            add = run_measured(
                add_cmd,
                env=env,
                label="scrapeflow tasks add",
                cwd=cwd,
                timeout=_timeout(n, 0.01),
                extra_cpu=site.cpu_seconds,
            )
        result["add"] = tree_figures(add, memory)
        home_before = du_bytes(home)
        post(site.url + "/control/requests/reset")  # this run's requests only
        run_cmd = materialize_cmd(OURS_MODULE, ",".join(CHAIN), keys, None)
        with TreeMemory(exclude=[site.proc.pid]) as memory:
            t0 = time.perf_counter()
            with FirstPage(site.url, t0) as first:
                run = run_measured(
                    run_cmd,
                    env=env,
                    label="materialize the chain",
                    cwd=cwd,
                    timeout=_timeout(n, 0.2),
                    extra_cpu=site.cpu_seconds,
                    check=False,  # a failed run still has figures; it is reported not exact
                )
        result["run"] = tree_figures(run, memory)
        result["run"]["tasks_per_second"] = n / run.seconds
        result["run"]["first_request_seconds"] = first.first_request_seconds
        result["run"]["first_page_seconds"] = first.first_page_seconds
        # The rate once pages flow: without the fixed start (imports, planning), which
        # flatters a large size's N / wall against a small one's.
        if first.first_page_seconds is not None and run.seconds > first.first_page_seconds:
            steady = n / (run.seconds - first.first_page_seconds)
            result["run"]["tasks_per_second_after_first_page"] = steady
        if run.returncode != 0:
            result["run"]["stderr_tail"] = run.stderr_tail
            print(f"the run exited {run.returncode}:\n{run.stderr_tail}", file=sys.stderr)
        if n <= REQUESTS_CHECK_MAX_TASKS:
            result["requests"] = page_requests(site.url, n)
    home_after = du_bytes(home)
    result["exact"] = materialised(home, keys)
    result["status"] = measure_status(env, cwd, args.status_rounds)
    exact = result["exact"]
    exact["status_exact"] = status_exact(result["status"]["output"], n)
    exact["pages_all_once"] = result.get("requests", {}).get("pages_all_once")
    exact["ok"] = (
        run.returncode == 0
        and exact.get("run_status") == "SUCCESS"
        and exact["all_materialized"]
        and exact["status_exact"] is True
        and exact["pages_all_once"] is not False  # None: not checked at this size
    )
    data_bytes = du_bytes(data)
    result["bytes"] = {"home_before_run": home_before, "home": home_after, "data": data_bytes}
    result["per_task"] = {
        "home_run_apparent": (home_after["apparent"] - home_before["apparent"]) / n,
        "home_run_allocated": (home_after["allocated"] - home_before["allocated"]) / n,
        "home_total_apparent": home_after["apparent"] / n,
        "home_total_allocated": home_after["allocated"] / n,
        "data_apparent": data_bytes["apparent"] / n,
        "data_allocated": data_bytes["allocated"] / n,
    }
    if not args.keep:
        cleanup(sub)  # 1M tasks leave tens of GB: gone before the next size starts
    return result


def targets(sizes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per target (and size): the figure, its value, the target and whether it holds
    (None: shown, not judged)."""
    found: list[dict[str, Any]] = []

    def check(figure: str, value: float | None, target: str, ok: bool | None) -> None:
        found.append({"figure": figure, "value": value, "target": target, "ok": ok})

    base = next((r for r in sizes if r["tasks"] == BASELINE_TASKS), None)
    base = base or min(sizes, key=lambda r: r["tasks"])
    top = max(sizes, key=lambda r: r["tasks"])
    if top is not base:
        pair = f"{top['tasks']:,} / {base['tasks']:,}"
        ratio = top["run"]["tasks_per_second"] / base["run"]["tasks_per_second"]
        check(f"tasks/s {pair}", ratio, f">= {RATE_RATIO_TARGET}", ratio >= RATE_RATIO_TARGET)
        # Not judged: the target is on N / wall; this one leaves the fixed start out.
        steady = "tasks_per_second_after_first_page"
        if top["run"].get(steady) and base["run"].get(steady):
            ratio = top["run"][steady] / base["run"][steady]
            check(f"tasks/s after the first page {pair}", ratio, "", None)

    def below(value: float | None, limit: float) -> bool:
        return value is not None and value < limit

    for r in sizes:
        n, add, run = f"{r['tasks']:,}", r["add"], r["run"]
        rss = add["tree_sum_peak_rss_mib"]
        check(f"{n}: add tree peak RSS MiB", rss, "< 1024", below(rss, TREE_RSS_TARGET_MIB))
        rss = run["tree_sum_peak_rss_mib"]
        check(f"{n}: run tree peak RSS MiB", rss, "< 1024", below(rss, TREE_RSS_TARGET_MIB))
        pss = run["tree_concurrent_pss_mib"]
        check(f"{n}: run tree PSS MiB (one moment)", pss, "< 1024", below(pss, TREE_RSS_TARGET_MIB))
        first = run["first_page_seconds"]
        check(f"{n}: first page s", first, "< 30", below(first, FIRST_PAGE_TARGET_SECONDS))
        home = r["per_task"]["home_run_apparent"]
        ok = home <= HOME_TARGET_BYTES_PER_TASK
        check(f"{n}: home KB/task added by the run", home / 1024, "<= 3", ok)
        worst = r["status"]["worst_seconds"]
        check(f"{n}: status s (slowest round)", worst, "< 5", below(worst, STATUS_TARGET_SECONDS))
        check(f"{n}: exact states", None, "", r["exact"]["ok"])
    return found


@contextlib.contextmanager
def leftovers_stopped() -> Iterator[None]:
    """On the way out, Ctrl-C or an error included, end whatever the measured commands left
    running: they run in sessions of their own, so the terminal's SIGINT never reaches them."""
    try:
        yield
    finally:
        stop_leftovers()


def stop_leftovers(grace: float = 10.0) -> None:
    """SIGTERM this process's descendants (their process groups), SIGKILL after `grace`."""
    # An interrupted `run_measured` leaves its timeout timer running: not a daemon thread, it
    # would hold the interpreter's exit for up to the whole timeout.
    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer):
            thread.cancel()
    me, my_group = os.getpid(), os.getpgid(0)
    deadline = time.monotonic() + grace
    sig = signal.SIGTERM
    while pids := [p for p in descendants(me) if p != me]:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                group = os.getpgid(pid)
                if group != my_group:
                    os.killpg(group, sig)
                else:
                    os.kill(pid, sig)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # reaps it when it is a child of this process
        if time.monotonic() > deadline:
            if sig == signal.SIGKILL:
                break  # not even SIGKILL ended it: say so rather than wait forever
            sig, deadline = signal.SIGKILL, time.monotonic() + grace
        time.sleep(0.1)
    if pids:
        print(f"still running after SIGKILL: {pids}", file=sys.stderr)


def _verdict(ok: bool | None) -> str:
    return "-" if ok is None else ("PASS" if ok else "FAIL")


def _interrupted(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM too goes through the cleanup


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--million", action="store_true", help="add 1,000,000 tasks")
    parser.add_argument("--page-bytes", type=int, default=20_000, help="the site's page size")
    parser.add_argument("--status-rounds", type=int, default=3, help="`scrapeflow status` runs")
    parser.add_argument("--tmp-dir", default=None, help="where the size folders go")
    parser.add_argument("--keep", action="store_true", help="keep the size folders")
    parser.add_argument("--json", metavar="PATH", help="write the figures to PATH as JSON")
    args = parser.parse_args(argv)
    sizes = [*args.sizes, *([MILLION] if args.million else [])]
    report: dict[str, Any] = {
        "config": {"sizes": sizes, "page_bytes": args.page_bytes, **machine_info()},
        "sizes": [],
    }
    signal.signal(signal.SIGTERM, _interrupted)
    try:
        with temp_root("bench-chain-scale-", args.tmp_dir, keep=args.keep) as root:
            for n in sizes:
                with leftovers_stopped():
                    r = measure_size(root, n, args)
                report["sizes"].append(r)
                run, per = r["run"], r["per_task"]
                first = run["first_page_seconds"]
                print(
                    f"{n:,} tasks: add {r['add']['seconds']:.1f} s; run {run['seconds']:.1f} s"
                    f" ({run['tasks_per_second']:,.0f} tasks/s), first page "
                    + (f"{first:.2f} s" if first is not None else "never")
                    + f"; tree peak RSS add {r['add']['tree_sum_peak_rss_mib']:.0f} MiB, run"
                    f" {run['tree_sum_peak_rss_mib']:.0f} MiB (largest"
                    f" {run['largest_peak_rss_mib']:.0f}); home"
                    f" {per['home_run_apparent'] / 1024:.2f} KB/task; disk writes"
                    f" {run['disk_write_bytes'] / n / 1024:.0f} KB/task; status"
                    f" {r['status']['median_seconds']:.2f} s; exact {r['exact']['ok']}",
                    flush=True,
                )
    except KeyboardInterrupt:
        print("interrupted: the commands it started are stopped", file=sys.stderr)
        return 130

    def kb(value: float | None) -> float | None:
        return None if value is None else value / 1024

    rows = [
        [
            r["tasks"],
            r["add"]["seconds"],
            r["add"]["tree_sum_peak_rss_mib"],
            r["run"]["seconds"],
            r["run"]["tasks_per_second"],
            r["run"].get("tasks_per_second_after_first_page"),
            r["run"]["first_page_seconds"],
            r["run"]["largest_peak_rss_mib"],
            r["run"]["tree_sum_peak_rss_mib"],
            r["run"]["tree_concurrent_rss_mib"],
            r["run"]["tree_concurrent_pss_mib"],
            kb(r["per_task"]["home_run_apparent"]),
            kb(r["per_task"]["home_run_allocated"]),
            kb(r["per_task"]["home_total_apparent"]),
            kb(r["per_task"]["data_allocated"]),
            kb(r["run"]["disk_write_bytes"] / r["tasks"]),
            r["status"]["median_seconds"],
            "yes" if r["exact"]["ok"] else "NO",
        ]
        for r in report["sizes"]
    ]
    print_table(
        [
            "tasks",
            "add s",
            "add MiB",
            "run s",
            "tasks/s",
            "after 1st",
            "1st page s",
            "largest MiB",
            "tree MiB",
            "RSS now",
            "PSS now",
            "home KB/t",
            "alloc",
            "home total",
            "data KB/t",
            "written KB/t",
            "status s",
            "exact",
        ],
        rows,
        title=(
            "the chain in one run (after 1st: tasks/s once pages flow; MiB: peak RSS; tree ="
            " sum of each process's peak; RSS/PSS now = the tree summed at one moment, at its"
            " highest; home KB/t = what the run added, apparent, then allocated; data allocated;"
            " written = file data the run's processes wrote to disk)"
        ),
    )
    report["targets"] = targets(report["sizes"])
    print_table(
        ["figure", "value", "target", "verdict"],
        [[t["figure"], t["value"], t["target"], _verdict(t["ok"])] for t in report["targets"]],
        title="issue 42's targets (first page: the site's first /page/N request, polled)",
    )
    write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
