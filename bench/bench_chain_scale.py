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
import signal
import sys
from typing import Any

from bench.chain_scale.leftovers import leftovers_stopped
from bench.chain_scale.measure import measure_size
from bench.chain_scale.targets import targets
from bench.lib.homes import temp_root
from bench.lib.report import machine_info, print_table, write_json

MILLION = 1_000_000


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
