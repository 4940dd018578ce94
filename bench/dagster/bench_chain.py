"""What a run of the whole chain costs: `scrape`, `validation` and `pages` in one run against
`scrape` alone and against the three assets as three runs (how the demo and the crawl ran them
before the chain was one step), on the same tasks, each in a fresh embedded home.

Every measurement is the real `dagster asset materialize` on the shipped location, started from
a temp folder (the code location's own executor: sharded when the machine has several cores).
It prints wall and CPU seconds, the ratios chain / scrape alone and chain / three runs, the
materialisation events each asset got (one per partition is the target) and the Dagster home's
growth per task.

    .venv/bin/python -m bench.dagster.bench_chain [--tasks 3000] [--rounds 2] [--json PATH]

`--main-content` measures instead the chain in one run with `page_main_content` off and on
(issue 62: on should keep at least 0.8x the tasks/s), and prints the ratio and CPU per page.
"""

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.dagster.cli_runs import write_tasks
from bench.lib.homes import bench_env, make_home, temp_root
from bench.lib.measured import run_measured
from bench.lib.repo import PYTHON
from bench.lib.report import print_table, write_json
from bench.lib.site import Site

CHAIN = ("scrape", "validation", "pages")
MODULE = "scrapeflow_dagster.definitions"
WAYS = {
    "scrape alone": [["scrape"]],
    "chain, one run": [list(CHAIN)],
    "chain, three runs": [[asset] for asset in CHAIN],
}
# `--main-content`: the chain in one run, its `scrape_settings` off and on.
MAIN_CONTENT_WAYS = {"chain, one run": [list(CHAIN)], "chain, main content": [list(CHAIN)]}
SETTINGS = {"chain, main content": {"page_main_content": True}}


def materialize_cmd(
    assets: list[str], first: str, last: str, settings: dict[str, Any] | None = None
) -> list[str]:
    """A user's plain `dagster asset materialize` of `assets` over `first...last`, with
    `settings` as the run's `scrape_settings` config when given."""
    command = [sys.executable, "-m", "dagster", "asset", "materialize", "-m", MODULE]
    command += ["--select", ",".join(assets), "--partition-range", f"{first}...{last}"]
    if settings:
        config = {"resources": {"scrape_settings": {"config": settings}}}
        command += ["--config-json", json.dumps(config)]
    return command


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def event_counts(home: Path) -> dict[str, int]:
    """Materialisation events per asset in the home."""
    import dagster as dg

    counts = dict.fromkeys(CHAIN, 0)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for asset in CHAIN:
            cursor = None
            while True:  # Dagster hands out at most 10,000 records at a time
                page = instance.fetch_materializations(
                    dg.AssetKey(asset), limit=10_000, cursor=cursor
                )
                counts[asset] += len(page.records)
                if not page.has_more:
                    break
                cursor = page.cursor
    return counts


def measure(
    root: Path,
    site: Site,
    tasks_file: Path,
    keys: list[str],
    way: str,
    tag: str,
    ways: dict[str, list[list[str]]] = WAYS,
) -> dict:
    """Add the tasks in a fresh home, then run the way's materialize commands in turn."""
    home = make_home(root, f"home-{tag}", ours=True)
    data = root / f"data-{tag}"
    env = bench_env(home, data)
    add = [PYTHON, "-m", "scrapeflow_dagster.cli", "tasks", "add", str(tasks_file)]
    run_measured(add, env=env, label="tasks add", cwd=root)
    before = folder_bytes(home)
    seconds = cpu = 0.0
    for assets in ways[way]:
        done = run_measured(
            materialize_cmd(assets, keys[0], keys[-1], SETTINGS.get(way)),
            env=env,
            label=",".join(assets),
            cwd=root,
            extra_cpu=site.cpu_seconds,
            timeout=1800,
        )
        seconds += done.seconds
        cpu += done.cpu_seconds
    growth = folder_bytes(home) - before
    result = {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "home_bytes_per_task": growth / len(keys),
        "events": event_counts(home),
    }
    run_measured(["rm", "-rf", str(home), str(data)], env=env, label="cleanup", cwd=root)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", default=None)
    parser.add_argument("--main-content", action="store_true", help="page_main_content off/on")
    args = parser.parse_args(argv)
    ways = MAIN_CONTENT_WAYS if args.main_content else WAYS
    found: dict[str, list[dict[str, Any]]] = {way: [] for way in ways}
    with temp_root("bench-chain-") as root, Site(pages=args.tasks, page_bytes=5000) as site:
        tasks_file, _, keys = write_tasks(root, site.url, args.tasks)
        for round_ in range(args.rounds):
            # Alternated, so a slower stretch of a shared machine hits every way alike.
            for way in ways:
                tag = f"{way.replace(' ', '-').replace(',', '')}-{round_}"
                found[way].append(measure(root, site, tasks_file, keys, way, tag, ways))
                print(f"round {round_}: {way}: {found[way][-1]}", flush=True)

    def median(way: str, field: str) -> float:
        return statistics.median(m[field] for m in found[way])

    chain = median("chain, one run", "seconds")
    if args.main_content:
        return report_main_content(args, found, median)
    summary = {
        "tasks": args.tasks,
        "rounds": args.rounds,
        "median_seconds": {way: median(way, "seconds") for way in WAYS},
        "median_cpu_seconds": {way: median(way, "cpu_seconds") for way in WAYS},
        "chain_over_scrape_alone": chain / median("scrape alone", "seconds"),
        "chain_over_three_runs": chain / median("chain, three runs", "seconds"),
        "events": {way: found[way][-1]["events"] for way in WAYS},
        "home_bytes_per_task": {way: median(way, "home_bytes_per_task") for way in WAYS},
    }
    print_table(
        ["way", "wall s", "CPU s", "events scrape/validation/pages", "home bytes/task"],
        [
            [
                way,
                round(summary["median_seconds"][way], 1),
                round(summary["median_cpu_seconds"][way], 1),
                "/".join(str(summary["events"][way][a]) for a in CHAIN),
                round(summary["home_bytes_per_task"][way]),
            ]
            for way in WAYS
        ],
        title=f"{args.tasks} tasks, median of {args.rounds} rounds",
    )
    print(
        f"chain in one run / scrape alone: {summary['chain_over_scrape_alone']:.2f}; "
        f"/ three runs: {summary['chain_over_three_runs']:.2f}"
    )
    write_json(args.json, {"summary": summary, "rounds": found})
    return 0


def report_main_content(
    args: argparse.Namespace,
    found: dict[str, list[dict[str, Any]]],
    median: Callable[[str, str], float],
) -> int:
    """Print and write the chain's tasks/s and CPU per page with main content off and on."""
    off, on = "chain, one run", "chain, main content"
    summary = {
        "tasks": args.tasks,
        "rounds": args.rounds,
        "tasks_per_second": {w: args.tasks / median(w, "seconds") for w in (off, on)},
        "cpu_ms_per_task": {w: 1000 * median(w, "cpu_seconds") / args.tasks for w in (off, on)},
    }
    summary["on_over_off"] = summary["tasks_per_second"][on] / summary["tasks_per_second"][off]
    cpu = summary["cpu_ms_per_task"]
    summary["main_content_cpu_ms_per_page"] = cpu[on] - cpu[off]
    print_table(
        ["way", "wall s", "CPU s", "tasks/s", "CPU ms/task"],
        [
            [
                way,
                round(median(way, "seconds"), 1),
                round(median(way, "cpu_seconds"), 1),
                round(summary["tasks_per_second"][way], 1),
                round(cpu[way], 2),
            ]
            for way in (off, on)
        ],
        title=f"{args.tasks} tasks, median of {args.rounds} rounds, page_main_content off / on",
    )
    print(
        f"main content on / off: {summary['on_over_off']:.2f}x tasks/s; "
        f"{summary['main_content_cpu_ms_per_page']:.1f} ms CPU more per page"
    )
    write_json(args.json, {"summary": summary, "rounds": found})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
