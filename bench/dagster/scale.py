"""Peak RSS of ours (and optionally the floor) at 10k and at 100k partitions, in one run.

Not part of bench_dagster's default run (`--only scale`; ~30 min on tmpfs). Target printed: the
largest process of ours grows less than 2x from the small size to the large one.
"""

import argparse
from pathlib import Path
from typing import Any

from bench.dagster.cli_runs import cleanup, measure_floor, measure_ours, role_peak_rss, write_tasks
from bench.dagster.targets import RSS_GROWTH_TARGET
from bench.lib.report import mib_text
from bench.lib.site import Site


def _scale_figures(m: dict[str, Any]) -> dict[str, Any]:
    mat = m["materialize"]
    return {
        "add_seconds": m["add"]["seconds"],
        "add_peak_rss_mib": m["add"]["tree_peak_rss_mib"],
        "materialize_seconds": mat["seconds"],
        "materialized": m["analysis"].get("materialized"),
        "worker_peak_rss_mib": role_peak_rss(mat, "step worker"),
        "cli_peak_rss_mib": role_peak_rss(mat, "dagster asset materialize"),
        "tree_peak_rss_mib": mat["tree_peak_rss_mib"],
    }


def part_scale(args: argparse.Namespace, root: Path, report: dict[str, Any]) -> None:
    """Peak RSS of ours at --scale-tasks against a tenth of it (at most 10k), in one run.

    The floor (`--scale-floor`) is optional: at 100k partitions Dagster alone needs ~40 min per
    run on disk, and this part is about memory. `--tmp-dir /dev/shm` puts the Dagster homes on
    tmpfs (about half the event-writing time); RSS does not depend on it.
    """
    sizes = [min(10_000, max(1, args.scale_tasks // 10)), args.scale_tasks]
    who = ["ours"] + (["floor"] if args.scale_floor else [])
    print(f"\n== scale: {' and '.join(who)} at {sizes[0]:,} and {sizes[1]:,} partitions")
    results: dict[str, dict[int, dict[str, Any]]] = {name: {} for name in who}
    for n in sizes:
        sub = root / f"scale-{n}"
        sub.mkdir()
        with Site(pages=n, page_bytes=args.page_bytes) as site:
            tasks_file, keys_file, keys = write_tasks(sub, site.url, n)
            for name in who:
                if name == "ours":
                    m = measure_ours(sub, site, tasks_file, keys, f"scale-{n}")
                else:
                    m = measure_floor(sub, keys_file, keys, f"scale-{n}")
                r = results[name][n] = _scale_figures(m)
                print(
                    f"{name:<5} {n:>7,} tasks: add {r['add_seconds']:.1f} s, materialize"
                    f" {r['materialize_seconds']:.1f} s ({r['materialized']} materialised);"
                    f" peak RSS step worker {mib_text(r['worker_peak_rss_mib'])}, CLI"
                    f" {mib_text(r['cli_peak_rss_mib'])}, largest process"
                    f" {mib_text(r['tree_peak_rss_mib'])}",
                    flush=True,
                )
        cleanup(sub)
    report["scale"] = {"sizes": sizes}
    for name in who:
        small, big = results[name][sizes[0]], results[name][sizes[1]]
        growth = big["tree_peak_rss_mib"] / small["tree_peak_rss_mib"]
        report["scale"][name] = {"runs": {str(k): v for k, v in results[name].items()}}
        report["scale"][name]["rss_growth"] = growth
        verdict = ""
        if name == "ours":
            ok = growth < RSS_GROWTH_TARGET
            report["scale"]["rss_growth_ok"] = ok
            verdict = f" (target < {RSS_GROWTH_TARGET:.0f}): {'PASS' if ok else 'FAIL'}"
        print(
            f"{name}: largest process peak RSS {sizes[1]:,} / {sizes[0]:,} tasks:"
            f" {big['tree_peak_rss_mib']:.0f} / {small['tree_peak_rss_mib']:.0f} MiB ="
            f" {growth:.2f}{verdict}"
        )
    if "floor" in results:
        ours, floor = results["ours"][sizes[1]], results["floor"][sizes[1]]
        print(
            f"at {sizes[1]:,} tasks ours / floor: largest process"
            f" {ours['tree_peak_rss_mib'] / floor['tree_peak_rss_mib']:.2f}, materialize time"
            f" {ours['materialize_seconds'] / floor['materialize_seconds']:.2f}"
        )
