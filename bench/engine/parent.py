"""The engine benchmark's parent side: children started, variants alternated, figures printed.

Variants alternate A B A B ... over the same local site; each run gets a fresh temporary folder,
deleted afterwards. Targets printed: A/B throughput ratio >= 0.90, A's peak RSS <= 150 MiB at
10k tasks and < 1.3x that at 100k.
"""

import argparse
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.engine.child import RESULT_PREFIX
from bench.lib.repo import REPO
from bench.lib.site import Site

RATIO_TARGET = 0.90
RSS_TARGET_MIB = 150.0
RSS_GROWTH_TARGET = 1.3
CHILD_TIMEOUT_SECONDS = 900
VARIANT_NAMES = {"A": "engine", "B": "baseline"}


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
