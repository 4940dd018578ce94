"""Ours against Scrapy on the same local site, side by side in one run (`make bench`: "peer").

- crawl: `scrapeflow crawl` of the site's `/docs/` (a documentation site's shape: 530 pages,
  index pages with 240 links, robots.txt) to depth 3 (502 pages), against Scrapy crawling the
  same seed to the same depth (robots.txt obeyed, 8 per host, breadth-first).
- task list: N pages (default 10,000) through `dagster asset materialize --select scrape
  --partition-range` on the embedded home, against Scrapy fetching the same URLs.
- Dagster's floor beside each: what Dagster alone costs for the same partitions and runs,
  fetching nothing (`crawl_floor`: the crawl's rounds as in-process runs of `bench.floor_defs`'
  trivial asset; the task list: that asset through the same `dagster asset materialize`).
  The crawl also gets the floor of a crawl streamed through one run (every page materialised
  by a single run): the least any design costs that keeps each page a partition materialised
  by a Dagster run.

Both take the site at 8 requests in flight per host; our data dir and Dagster home are on
tmpfs when `/dev/shm` exists (so is Scrapy's feed). Each way runs `--rounds` times,
alternated; it prints the median wall time, pages/s and CPU seconds of each, the pages each
fetched (counted by the site), and the ratios ours / Scrapy. Scrapy is installed by the bench
into its own venv (`bench.peers.venvs`).

    .venv/bin/python -m bench.dagster.bench_peer [--tasks 10000] [--rounds 2] [--json PATH]
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import urllib.request
from pathlib import Path
from typing import Any

from bench.dagster.cli_runs import write_tasks
from bench.lib.homes import bench_env, make_home, temp_root
from bench.lib.measured import Measured, run_measured
from bench.lib.repo import PYTHON, REPO
from bench.lib.report import print_table, write_json
from bench.lib.site import Site
from bench.peers.venvs import SCRAPY_REQUIREMENT, scrapy_version, venv_python

SPIDER = REPO / "bench" / "peers" / "scrapy_spider.py"
CRAWL_DEPTH = 3


def remove_outputs(root: Path, tag: str) -> None:
    """Remove what one measured way left (its home, data folder, Scrapy's feed): every round
    starts beside the same files. Kept in tmpfs, ours left ~200 MB per task-list round, and
    our task list slowed by ~0.25 s a round in one run (8.70, 8.93, 9.15 s) while Scrapy's
    did not."""
    for path in (root / f"home-{tag}", root / f"data-{tag}", root / f"scrapy-{tag}.jsonl"):
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def site_requests(site: Site, prefix: str) -> int:
    """Requests the site answered under `prefix` since its last reset."""
    with urllib.request.urlopen(site.url + "/control/requests", timeout=10) as response:
        paths = json.load(response)["paths"]
    return sum(n for path, n in paths.items() if path.startswith(prefix))


def reset_requests(site: Site) -> None:
    request = urllib.request.Request(site.url + "/control/requests/reset", method="POST")
    urllib.request.urlopen(request, timeout=10).close()


def ours_crawl(root: Path, site: Site, tag: str) -> dict[str, Any]:
    home = make_home(root, f"home-{tag}", ours=True)
    env = bench_env(home, root / f"data-{tag}")
    seeds = root / "seeds.txt"
    seeds.write_text(site.url + "/docs/0\n")
    cmd = [PYTHON, "-m", "scrapeflow_dagster.cli", "crawl", str(seeds), "--max-depth", "3"]
    return _measured(cmd, env, root, site, "/docs/", "ours crawl")


def crawl_rounds(data_dir: Path) -> list[int]:
    """Pages per round of the crawl whose data folder is `data_dir`: the seed, then the links
    each depth added (from its DuckDB frontier)."""
    import duckdb

    from scrapeflow_dagster.engine.state.layout import DataLayout

    sql = "SELECT depth, count(*) FROM frontier WHERE outcome = 'added' GROUP BY 1 ORDER BY 1"
    with duckdb.connect(str(DataLayout(data_dir).db_path), read_only=True) as db:
        added = [n for _depth, n in db.sql(sql).fetchall()]
    return [1, *added]


def floor_crawl(root: Path, site: Site, sizes: list[int], tag: str) -> dict[str, Any]:
    """Dagster alone for a crawl of `sizes` pages per round (`bench.dagster.crawl_floor`)."""
    home = make_home(root, f"home-{tag}", ours=True)
    env = bench_env(home, root / f"data-{tag}", {"PYTHONPATH": str(REPO)})
    cmd = [PYTHON, "-m", "bench.dagster.crawl_floor", *map(str, sizes)]
    done = run_measured(cmd, env=env, label="floor crawl", cwd=root)
    return _figures(done, sum(sizes))


def floor_list(root: Path, keys_file: Path, keys: list[str], tag: str) -> dict[str, Any]:
    """Dagster alone for the task list: the floor's trivial asset over the same partitions,
    through the same `dagster asset materialize`, on a home as ours."""
    home = make_home(root, f"home-{tag}", ours=True)
    env = bench_env(home, root / f"data-{tag}", {"PYTHONPATH": str(REPO)})
    add = [PYTHON, "-m", "bench.floor_defs", "add", str(keys_file)]
    run_measured(add, env=env, label="floor add", cwd=root)
    cmd = [sys.executable, "-m", "dagster", "asset", "materialize", "-m", "bench.floor_defs"]
    cmd += ["--select", "trivial", "--partition-range", f"{keys[0]}...{keys[-1]}"]
    done = run_measured(cmd, env=env, label="floor task list", cwd=root)
    return _figures(done, len(keys))


def scrapy_crawl(python: Path, root: Path, site: Site, tag: str) -> dict[str, Any]:
    out = root / f"scrapy-{tag}.jsonl"
    cmd = [str(python), str(SPIDER), "crawl", site.url + "/docs/0", str(CRAWL_DEPTH), str(out)]
    return _measured(cmd, bench_env(root), root, site, "/docs/", "scrapy crawl")


def ours_list(root: Path, site: Site, tasks_file: Path, keys: list[str], tag: str) -> dict:
    home = make_home(root, f"home-{tag}", ours=True)
    env = bench_env(home, root / f"data-{tag}")
    add = [PYTHON, "-m", "scrapeflow_dagster.cli", "tasks", "add", str(tasks_file)]
    added = run_measured(add, env=env, label="tasks add", cwd=root)
    cmd = [sys.executable, "-m", "dagster", "asset", "materialize", "-m"]
    cmd += ["scrapeflow_dagster.definitions", "--select", "scrape"]
    cmd += ["--partition-range", f"{keys[0]}...{keys[-1]}"]
    measured = _measured(cmd, env, root, site, "/page/", "ours task list")
    # A user waits for both commands (Scrapy reads the same file in its one process).
    measured["add_seconds"] = added.seconds
    measured["seconds_with_add"] = added.seconds + measured["seconds"]
    measured["pages_per_s_with_add"] = measured["pages"] / measured["seconds_with_add"]
    return measured


def scrapy_list(python: Path, root: Path, site: Site, tasks_file: Path, tag: str) -> dict:
    out = root / f"scrapy-{tag}.jsonl"
    cmd = [str(python), str(SPIDER), "list", str(tasks_file), str(out)]
    return _measured(cmd, bench_env(root), root, site, "/page/", "scrapy task list")


def _measured(
    cmd: list[str], env: dict[str, str], root: Path, site: Site, prefix: str, label: str
) -> dict[str, Any]:
    reset_requests(site)
    done = run_measured(cmd, env=env, label=label, cwd=root, extra_cpu=site.cpu_seconds)
    return _figures(done, site_requests(site, prefix))


def _figures(done: Measured, pages: int) -> dict[str, Any]:
    """Wall time, CPU, pages and pages/s of one measured way."""
    return {
        "seconds": done.seconds,
        "cpu_seconds": done.cpu_seconds,
        "pages": pages,
        "pages_per_s": pages / done.seconds if done.seconds else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", choices=("crawl", "list"), help="one of the two comparisons")
    parser.add_argument("--json", default=None)
    parser.add_argument(
        "--no-floor",
        action="store_true",
        help="leave out Dagster's floor (a trivial asset on the stock home: minutes per round)",
    )
    args = parser.parse_args(argv)
    python = venv_python("scrapy", [SCRAPY_REQUIREMENT])
    version = scrapy_version(python)
    parent = "/dev/shm" if os.path.isdir("/dev/shm") else None
    found: dict[str, list[dict[str, Any]]] = {}
    with temp_root("bench-peer-", parent=parent) as root, Site(pages=args.tasks) as site:
        tasks_file, keys_file, keys = write_tasks(root, site.url, args.tasks)
        rounds: list[int] = []

        def ours_crawl_noting_rounds(tag: str) -> dict[str, Any]:
            measured = ours_crawl(root, site, tag)
            rounds[:] = crawl_rounds(root / f"data-{tag}")
            return measured

        ways = {
            "ours crawl": ours_crawl_noting_rounds,
            "scrapy crawl": lambda tag: scrapy_crawl(python, root, site, tag),
            "dagster floor crawl": lambda tag: floor_crawl(root, site, rounds, tag),
            "dagster floor crawl, one run": lambda tag: floor_crawl(root, site, [sum(rounds)], tag),
            "ours task list": lambda tag: ours_list(root, site, tasks_file, keys, tag),
            "scrapy task list": lambda tag: scrapy_list(python, root, site, tasks_file, tag),
            "dagster floor task list": lambda tag: floor_list(root, keys_file, keys, tag),
        }
        if args.only:
            ways = {way: run for way, run in ways.items() if args.only in way}
        if args.no_floor:
            ways = {way: run for way, run in ways.items() if "floor" not in way}
        for round_ in range(args.rounds):
            for way, measure in ways.items():  # alternated: a slow stretch hits every way
                tag = f"{way.replace(' ', '-').replace(',', '')}-{round_}"
                found.setdefault(way, []).append(measure(tag))
                print(f"round {round_}: {way}: {found[way][-1]}", flush=True)
                remove_outputs(root, tag)

    def median(way: str, field: str) -> float:
        return statistics.median(m[field] for m in found[way])

    summary: dict[str, Any] = {"scrapy": version, "tasks": args.tasks, "rounds": args.rounds}
    for way in found:
        summary[way] = {
            f: median(way, f) for f in ("seconds", "cpu_seconds", "pages", "pages_per_s")
        }
    if "ours crawl" in summary:
        summary["crawl_wall_ours_over_scrapy"] = (
            summary["ours crawl"]["seconds"] / summary["scrapy crawl"]["seconds"]
        )
    if "ours task list" in summary:
        for field in ("add_seconds", "seconds_with_add", "pages_per_s_with_add"):
            summary["ours task list"][field] = median("ours task list", field)
        summary["task_list_pages_per_s_ours_over_scrapy"] = (
            summary["ours task list"]["pages_per_s"] / summary["scrapy task list"]["pages_per_s"]
        )
        summary["task_list_with_add_ours_over_scrapy"] = (
            summary["ours task list"]["pages_per_s_with_add"]
            / summary["scrapy task list"]["pages_per_s"]
        )
    print_table(
        ["way", "wall s", "pages", "pages/s", "CPU s"],
        [
            [
                way,
                round(summary[way]["seconds"], 2),
                summary[way]["pages"],
                round(summary[way]["pages_per_s"] or 0),
                round(summary[way]["cpu_seconds"], 1),
            ]
            for way in found
        ],
        title=f"ours vs Scrapy {version}, median of {args.rounds} rounds",
    )
    if "crawl_wall_ours_over_scrapy" in summary:
        ratio = summary["crawl_wall_ours_over_scrapy"]
        print(f"crawl wall ours / Scrapy: {ratio:.2f} (target <= 1, aim 0.5)")
        if "dagster floor crawl" in summary:
            floor = summary["dagster floor crawl"]["seconds"] / summary["scrapy crawl"]["seconds"]
            one_run = summary["dagster floor crawl, one run"]["seconds"]
            one_run /= summary["scrapy crawl"]["seconds"]
            print(f"crawl wall Dagster's floor alone / Scrapy: {floor:.2f} (no page fetched)")
            print(f"crawl wall Dagster's floor, one run / Scrapy: {one_run:.2f} (no page fetched)")
    if "task_list_pages_per_s_ours_over_scrapy" in summary:
        ratio = summary["task_list_pages_per_s_ours_over_scrapy"]
        with_add = summary["task_list_with_add_ours_over_scrapy"]
        add_seconds = summary["ours task list"]["add_seconds"]
        print(f"task list pages/s ours, materialize alone / Scrapy: {ratio:.2f}")
        print(
            f"task list pages/s ours, `tasks add` ({add_seconds:.2f} s) counted / Scrapy:"
            f" {with_add:.2f} (target >= 2)"
        )
        if "dagster floor task list" in summary:
            floor = (
                summary["dagster floor task list"]["pages_per_s"]
                / summary["scrapy task list"]["pages_per_s"]
            )
            print(f"task list partitions/s Dagster's floor alone / Scrapy: {floor:.2f}")
    write_json(args.json, {"summary": summary, "rounds": found})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
