"""The rounds summarised per side (median pages/s, highest peaks), ours over Crawlee, and the
issue's goal printed as PASS or FAIL."""

import statistics
import sys
from typing import Any

from bench.lib.report import print_table
from bench.render_peer.kinds import KINDS

# The goal: at least Crawlee's pages/s at no more than half its memory.
GOAL_SPEED_RATIO = 1.0
GOAL_MEMORY_RATIO = 0.5


def summarise(rounds: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """Per side: median pages/s, highest peaks, fewest right pages; ours / Crawlee."""
    sides: dict[str, dict[str, Any]] = {}
    for side in ("ours", "crawlee"):
        runs = [r[side] for r in rounds]
        highest = max(runs, key=lambda run: run["memory"]["peak_pss_mib"])
        sides[side] = {
            "shards": runs[0].get("shards", 1),
            # Per kind of process, at the sample the side's PSS peaked (of its highest round).
            "peak_pss_by_kind": highest["memory"].get("peak_pss_by_kind", {}),
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


def print_report(
    summary: dict[str, Any], versions: dict[str, str], rounds: int, *, shards: int = 1
) -> None:
    """One shard count's table (and its PSS per kind of process), the ratios, the goal."""
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
            f"rendering {ours['pages']:,} script-built pages in {shards} shard"
            f"{'s' if shards > 1 else ''}: ours vs Crawlee "
            f"{versions['crawlee']} (Playwright {versions['playwright']}, Node "
            f"{versions['node']}), {rounds} round{'s' if rounds > 1 else ''},"
            f" both driving {versions.get('chromium', '/usr/bin/chromium')}"
        ),
    )
    print_kinds(ours["peak_pss_by_kind"], theirs["peak_pss_by_kind"])
    pss = summary["peak_pss_ratio"]
    rss = summary["peak_rss_ratio"]
    print(f"pages/s ours / crawlee:  {summary['pages_per_s_ratio']:.2f} (goal >= 1)")
    print(f"peak PSS ours / crawlee: {pss:.2f} (goal <= 0.5)" if pss else "peak PSS: -")
    print(f"peak RSS ours / crawlee: {rss:.2f}" if rss else "peak RSS: -")
    print(f"goal (pages/s ratio >= 1 at PSS ratio <= 0.5): {'PASS' if summary['goal'] else 'FAIL'}")
    sys.stdout.flush()


def print_kinds(ours: dict[str, dict[str, float]], theirs: dict[str, dict[str, float]]) -> None:
    """PSS (MiB) and processes per kind of process, each side at its peak."""

    def cell(found: dict[str, dict[str, float]], kind: str) -> str:
        figures = found.get(kind)
        if not figures:
            return "-"
        return f"{figures['pss_mib']:.0f} ({figures['processes']:.0f})"

    rows = [[kind, cell(ours, kind), cell(theirs, kind)] for kind in KINDS]
    rows = [row for row in rows if row[1:] != ["-", "-"]]
    print_table(
        ["at the peak: PSS MiB (processes)", "ours", "crawlee"],
        rows,
        title="PSS per kind of process, each side at its peak",
    )


def print_shards(summaries: dict[int, dict[str, Any]]) -> None:
    """One line per shard count: pages/s and peak PSS of each side, and the ratios."""
    rows = []
    for shards, summary in summaries.items():
        ours, theirs = summary["ours"], summary["crawlee"]
        pss = summary["peak_pss_ratio"]
        rows.append(
            [
                shards,
                f"{ours['pages_per_s']:.2f}",
                f"{theirs['pages_per_s']:.2f}",
                f"{summary['pages_per_s_ratio']:.2f}",
                round(ours["peak_pss_mib"]),
                round(theirs["peak_pss_mib"]),
                f"{pss:.2f}" if pss else "-",
                "PASS" if summary["goal"] else "FAIL",
            ]
        )
    print_table(
        ["shards", "pages/s ours", "crawlee", "ratio", "PSS MiB ours", "crawlee", "ratio", "goal"],
        rows,
        title="by shard count (goal: pages/s ratio >= 1 at PSS ratio <= 0.5)",
    )
    sys.stdout.flush()
