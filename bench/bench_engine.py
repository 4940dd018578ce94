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
import asyncio
import hashlib
import json
import os
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from bench.common import Site

REPO = Path(__file__).resolve().parent.parent
RESULT_PREFIX = "BENCH_RESULT "
RATIO_TARGET = 0.90
RSS_TARGET_MIB = 150.0
RSS_GROWTH_TARGET = 1.3
CHILD_TIMEOUT_SECONDS = 900
USER_AGENT = "scrapeflow-dagster-bench/0.1"
VARIANT_NAMES = {"A": "engine", "B": "baseline"}

# ----------------------------------------------------------------------------- child side


def task_stream(base_url: str, n: int, pages: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """The tasks, as a generator of `(key, params)` pairs: both variants consume the same."""
    for i in range(n):
        yield f"page-{i:07d}", {"url": f"{base_url}/page/{i % pages}"}


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


def _machine_busy_seconds() -> float | None:
    """CPU seconds all cores of the machine spent busy since boot (Linux only).

    The machine may be shared: what others run in the same window is reported with each
    figure, so a noisy round can be told from a slow engine.
    """
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


async def run_baseline(base_url: str, directory: Path, n: int, pages: int, parallelism: int) -> int:
    """Variant B: what a careful hand-written aiohttp loop does for the same tasks."""
    pairs = task_stream(base_url, n, pages)
    done = 0
    connector = aiohttp.TCPConnector(limit=parallelism, limit_per_host=0)
    async with aiohttp.ClientSession(
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=10),
        headers={"User-Agent": USER_AGENT},
        cookie_jar=aiohttp.DummyCookieJar(),
    ) as session:

        async def worker() -> None:
            nonlocal done
            for key, params in pairs:
                async with session.get(params["url"]) as response:
                    body = await response.read()
                    code = response.status
                    headers = {str(k): v for k, v in response.headers.items()}
                    final_url = str(response.url)
                if code != 200:
                    raise RuntimeError(f"{params['url']} answered {code}")
                _write_atomic(directory / f"{key}.scrape", body)
                status = {
                    "name": key,
                    "params": params,
                    "scrape": {
                        "size": len(body),
                        "content": hashlib.md5(body).hexdigest(),
                        "response_headers": headers,
                        "http_status": code,
                        "final_url": final_url,
                    },
                    "scrape_status": "SUCCESS",
                    "scrape_last_run": str(datetime.now(UTC).replace(tzinfo=None)),
                }
                _write_atomic(
                    directory / f"{key}.status.json",
                    orjson.dumps(status, option=orjson.OPT_INDENT_2),
                )
                done += 1

        async with asyncio.TaskGroup() as group:
            for _ in range(parallelism):
                group.create_task(worker())
    return done


def _child(args: argparse.Namespace) -> None:
    """Run one measurement in this process and print its figures as one JSON line."""
    directory = Path(args.dir)
    if args.child == "A":
        from scrapeflow_dagster.engine.executor import execute_async
        from scrapeflow_dagster.engine.scrape import scrape

        async def run() -> int:
            tasks = task_stream(args.url, args.tasks, args.pages)
            succeeded = await execute_async(
                [scrape], directory, tasks, max_parallelism=args.parallelism
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
    busy0 = _machine_busy_seconds()
    user0, sys0 = _cpu_seconds()
    t0 = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    ok = asyncio.run(run())
    if profiler is not None:
        profiler.disable()
    elapsed = time.perf_counter() - t0
    user1, sys1 = _cpu_seconds()
    busy1 = _machine_busy_seconds()
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


# ----------------------------------------------------------------------------- parent side


def measure(
    variant: str,
    tasks: int,
    site: Site,
    args: argparse.Namespace,
    *,
    profile_out: str | None = None,
) -> dict[str, Any]:
    """Run one variant in a child process over a fresh temp folder; return its figures."""
    directory = tempfile.mkdtemp(prefix=f"bench-engine-{variant}-", dir=args.tmp_dir)
    cmd = [
        sys.executable,
        "-m",
        "bench.bench_engine",
        "--child",
        variant,
        "--url",
        site.url,
        "--dir",
        directory,
        "--tasks",
        str(tasks),
        "--pages",
        str(site.pages),
        "--parallelism",
        str(args.parallelism),
    ]
    if profile_out:
        cmd += ["--profile-out", profile_out]
    server_cpu0 = site.cpu_seconds()
    try:
        proc = subprocess.run(
            cmd, cwd=REPO, stdout=subprocess.PIPE, text=True, timeout=CHILD_TIMEOUT_SECONDS
        )
        server_cpu1 = site.cpu_seconds()
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_PREFIX)]
        if proc.returncode != 0 or not lines:
            raise RuntimeError(f"variant {variant} failed (exit {proc.returncode})")
        result: dict[str, Any] = json.loads(lines[-1][len(RESULT_PREFIX) :])
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        os.sync()  # let the next run not pay for this one's write-back
    if server_cpu0 is not None and server_cpu1 is not None:
        result["server_cpu_share"] = (server_cpu1 - server_cpu0) / result["seconds"]
        if result.get("machine_busy_cores") is not None:
            # Cores busy with neither this measurement nor the site: other work on the machine.
            result["other_busy_cores"] = max(
                0.0,
                result["machine_busy_cores"]
                - result["cpu_seconds"] / result["seconds"]
                - result["server_cpu_share"],
            )
    return result


def _line(label: str, r: dict[str, Any]) -> str:
    server = r.get("server_cpu_share")
    server_text = f"  site CPU {server:4.0%}" if server is not None else ""
    other = r.get("other_busy_cores")
    other_text = f"  others {other:.2f} cores" if other is not None else ""
    return (
        f"{label:<14} {VARIANT_NAMES[r['variant']]:<8} {r['tasks']:>7} tasks"
        f"  {r['seconds']:7.2f} s  {r['pages_per_s']:7.0f} pages/s"
        f"  CPU {r['cpu_ms_per_page']:.3f} ms/page{server_text}{other_text}"
        f"  peak RSS {r['peak_rss_mib']:6.1f} MiB (after imports {r['start_rss_mib']:.1f})"
        + ("" if r["ok"] == r["tasks"] else f"  ONLY {r['ok']} OK")
    )


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def run_rounds(args: argparse.Namespace, site: Site, report: dict[str, Any]) -> None:
    if args.warmup:
        measure("B", args.warmup, site, args)  # connections, page cache, CPU clocks
    rounds: list[dict[str, Any]] = []
    for i in range(args.rounds):
        for variant in ("A", "B"):
            result = measure(variant, args.tasks, site, args)
            result["round"] = i + 1
            rounds.append(result)
            print(_line(f"round {i + 1}", result), flush=True)
    report["rounds"] = rounds
    if not rounds:
        return
    summary: dict[str, Any] = {}
    for variant in ("A", "B"):
        mine = [r for r in rounds if r["variant"] == variant]
        summary[variant] = {
            "median_pages_per_s": statistics.median(r["pages_per_s"] for r in mine),
            "median_cpu_ms_per_page": statistics.median(r["cpu_ms_per_page"] for r in mine),
            "median_cpu_system_ms_per_page": statistics.median(
                1000 * r["cpu_system_seconds"] / r["tasks"] for r in mine
            ),
            "median_other_busy_cores": (
                statistics.median(r["other_busy_cores"] for r in mine)
                if all(r.get("other_busy_cores") is not None for r in mine)
                else None
            ),
            "peak_rss_mib": max(r["peak_rss_mib"] for r in mine),
            "start_rss_mib": max(r["start_rss_mib"] for r in mine),
        }
    ratio = summary["A"]["median_pages_per_s"] / summary["B"]["median_pages_per_s"]
    summary["ratio_a_over_b"] = ratio
    summary["ratio_ok"] = ratio >= RATIO_TARGET
    report["summary"] = summary
    print()
    for variant in ("A", "B"):
        s = summary[variant]
        print(
            f"median {VARIANT_NAMES[variant]:<8} {s['median_pages_per_s']:7.0f} pages/s"
            f"  CPU {s['median_cpu_ms_per_page']:.3f} ms/page"
            f"  peak RSS {s['peak_rss_mib']:6.1f} MiB (after imports {s['start_rss_mib']:.1f})"
        )
    print(f"ratio A/B {ratio:.3f} (target >= {RATIO_TARGET}): {_verdict(summary['ratio_ok'])}")
    cpu_ratio = summary["B"]["median_cpu_ms_per_page"] / summary["A"]["median_cpu_ms_per_page"]
    summary["cpu_efficiency_a_vs_b"] = cpu_ratio
    print(
        f"CPU per page B/A {cpu_ratio:.3f} (1.0 = the engine spends as much CPU per page as the"
        " baseline; steadier than pages/s on a shared machine)"
    )
    if args.tasks == 10_000:
        rss_ok = summary["A"]["peak_rss_mib"] <= RSS_TARGET_MIB
        summary["rss_ok"] = rss_ok
        print(
            f"engine peak RSS {summary['A']['peak_rss_mib']:.1f} MiB at 10k"
            f" (target <= {RSS_TARGET_MIB:.0f}): {_verdict(rss_ok)}"
        )


def run_scale_check(args: argparse.Namespace, site: Site, report: dict[str, Any]) -> None:
    small = measure("A", args.scale_small, site, args)
    print(_line("scale small", small), flush=True)
    large = measure("A", args.scale_large, site, args)
    print(_line("scale large", large), flush=True)
    ratio = large["peak_rss_mib"] / small["peak_rss_mib"]
    growth = (large["peak_rss_mib"] - small["peak_rss_mib"]) / (large["tasks"] - small["tasks"])
    report["scale_check"] = {
        "small": small,
        "large": large,
        "rss_ratio": ratio,
        "rss_growth_bytes_per_task": growth * 1024 * 1024,
        "small_ok": small["peak_rss_mib"] <= RSS_TARGET_MIB,
        "ratio_ok": ratio < RSS_GROWTH_TARGET,
    }
    print()
    print(
        f"peak RSS {small['peak_rss_mib']:.1f} MiB at {small['tasks']}"
        f" (target <= {RSS_TARGET_MIB:.0f}): {_verdict(report['scale_check']['small_ok'])}"
    )
    print(
        f"peak RSS {large['peak_rss_mib']:.1f} MiB at {large['tasks']}: ratio {ratio:.3f}"
        f" (target < {RSS_GROWTH_TARGET}), {growth * 1024 * 1024:.0f} bytes/task:"
        f" {_verdict(report['scale_check']['ratio_ok'])}"
    )


def run_profiles(args: argparse.Namespace, site: Site, report: dict[str, Any]) -> None:
    profiles: dict[str, Any] = {}
    for variant in args.profile:
        out = str(Path(args.profile_dir) / f"bench_engine_{variant}.prof")
        result = measure(variant, args.tasks, site, args, profile_out=out)
        print()
        print(_line(f"profiled {variant}", result) + "  (cProfile overhead included)")
        print(f"stats in {out}; top {args.profile_top} by own time, then by cumulative time:")
        stats = pstats.Stats(out).strip_dirs()
        stats.sort_stats("tottime").print_stats(args.profile_top)
        stats.sort_stats("cumulative").print_stats(args.profile_top)
        profiles[variant] = {"stats": out, **result}
    report["profiles"] = profiles


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
        _child(args)
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
