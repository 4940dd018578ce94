"""One engine-benchmark measurement in this process: pages/s, CPU per page and peak RSS.

Each measurement runs in a fresh child process (`python -m bench.bench_engine --child A|B`), so
its peak RSS is its own; the figures go to the parent as one JSON line after `RESULT_PREFIX`.
"""

import argparse
import asyncio
import json
import resource
import sys
import time
from pathlib import Path

from bench.engine.baseline import run_baseline, task_stream
from bench.lib.proc_stats import machine_busy_seconds

RESULT_PREFIX = "BENCH_RESULT "


def _proc_status_mib(field: str) -> float | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _peak_rss_mib() -> float:
    hwm = _proc_status_mib("VmHWM")
    if hwm is not None:
        return hwm
    # ru_maxrss is in KiB on Linux, in bytes on macOS.
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return maxrss / (1024 * 1024) if sys.platform == "darwin" else maxrss / 1024


def _cpu_seconds() -> tuple[float, float]:
    """(user, system) CPU seconds of this process."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime, usage.ru_stime


def run_child(args: argparse.Namespace) -> None:
    """Run one measurement in this process and print its figures as one JSON line."""
    directory = Path(args.dir)
    if args.child == "A":
        from scrapeflow_dagster.engine.executor import execute_async
        from scrapeflow_dagster.engine.scrape import scrape
        from scrapeflow_dagster.engine.settings import PoliteSettings, ScrapeSettings

        # One host serves every task: the per-host limit is raised to the run's parallelism so
        # the politeness gate (robots.txt, slots) is paid on every request but does not bind,
        # as the bare loop it is compared with has no such limit.
        settings = ScrapeSettings(polite=PoliteSettings(max_per_host=args.parallelism))

        async def run() -> int:
            tasks = task_stream(args.url, args.tasks, args.pages)
            succeeded = await execute_async(
                [scrape], directory, tasks, max_parallelism=args.parallelism, settings=settings
            )
            return len(succeeded)
    else:

        async def run() -> int:
            return await run_baseline(args.url, directory, args.tasks, args.pages, args.parallelism)

    start_rss = _proc_status_mib("VmRSS") or _peak_rss_mib()
    profiler = None
    if args.profile_out:
        import cProfile

        profiler = cProfile.Profile()
    busy0 = machine_busy_seconds()
    user0, sys0 = _cpu_seconds()
    t0 = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    ok = asyncio.run(run())
    if profiler is not None:
        profiler.disable()
    elapsed = time.perf_counter() - t0
    user1, sys1 = _cpu_seconds()
    busy1 = machine_busy_seconds()
    cpu = (user1 - user0) + (sys1 - sys0)
    if profiler is not None:
        profiler.dump_stats(args.profile_out)
    result = {
        "variant": args.child,
        "tasks": args.tasks,
        "ok": ok,
        "seconds": elapsed,
        "pages_per_s": args.tasks / elapsed,
        "cpu_seconds": cpu,
        "cpu_user_seconds": user1 - user0,
        "cpu_system_seconds": sys1 - sys0,
        "machine_busy_cores": (
            (busy1 - busy0) / elapsed if busy0 is not None and busy1 is not None else None
        ),
        "cpu_ms_per_page": 1000 * cpu / args.tasks,
        "start_rss_mib": start_rss,
        "peak_rss_mib": _peak_rss_mib(),
        "profiled": profiler is not None,
    }
    print(RESULT_PREFIX + json.dumps(result), flush=True)
