"""The Dagster path, end to end, against a floor measured in the same run.

    .venv/bin/python -m bench.bench_dagster                       # 10k tasks, CLI and backfill
    .venv/bin/python -m bench.bench_dagster --only scale --tmp-dir /dev/shm   # RSS 10k vs 100k
    .venv/bin/python -m bench.bench_dagster --instance-settings   # settings variants at 2k
    .venv/bin/python -m bench.bench_dagster --json bench-dagster.json

Parts (each in fresh temporary Dagster homes, SQLite storage, telemetry off):

  materialize  (a) floor: `bench.floor_defs`' trivial asset over the same N dynamic partitions
               (BackfillPolicy.single_run), partitions added by `python -m bench.floor_defs add`,
               materialised by `python -m dagster asset materialize --partition-range A...B`.
               (b) ours: `python -m scrapeflow_dagster.cli tasks add tasks.txt` (N URLs of the
               local site, ~20 KB pages, site in its own process), then the same CLI on
               `scrape`. Ratios ours/floor for the materialize step and end to end (add +
               materialize); target end to end <= 1.15.
               (d) peak RSS of each process of the CLI's tree (VmHWM sampled from /proc, and
               os.wait4's maximum): the step worker that runs the asset (the multiprocess
               executor's spawned child) and the CLI itself; target <= 250 MiB at 10k.
  backfill     (c) `python -m dagster dev` (daemon + webserver), tasks added, a partition
               backfill of all keys launched through GraphQL (launchPartitionBackfill), polled
               (partitionBackfillOrError) until it completes; same for the floor asset.
  scale        (--only scale) ours alone at 10k and at --scale-tasks (100k): peak RSS ratio,
               target < 2. Not part of the default run (~30 min on tmpfs).
  settings     (--instance-settings) `scrape` materialisations at --settings-tasks under
               instance and run-config variants, as ratios of time against the default.

Each run's event log is read afterwards to show where the time went: per-partition
ASSET_MATERIALIZATION_PLANNED events written by the CLI when it creates the run, the asset's
own compute, and per-partition ASSET_MATERIALIZATION events written by the step worker.
Figures are printed, never asserted: the machine may be shared (see "others" = cores that other
processes kept busy meanwhile).
"""

import argparse
import os
import sys
import time
from typing import Any

from bench.dagster.backfill import part_backfill
from bench.dagster.materialize import part_materialize
from bench.dagster.scale import part_scale
from bench.dagster.settings import part_settings
from bench.lib.homes import temp_root
from bench.lib.repo import REPO
from bench.lib.report import machine_info, write_json


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=10_000, help="partitions for (a,b,d)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of floor then ours (1)")
    parser.add_argument(
        "--backfill-tasks",
        type=int,
        default=None,
        help="partitions for the daemon backfill (default: --tasks)",
    )
    parser.add_argument(
        "--scale-tasks", type=int, default=100_000, help="partitions for --only scale (100k)"
    )
    parser.add_argument(
        "--scale-floor", action="store_true", help="--only scale: measure the floor too"
    )
    parser.add_argument("--backfill-timeout", type=float, default=1800)
    parser.add_argument(
        "--backfill-ours-only",
        action="store_true",
        help="backfill part: skip the floor (peak RSS of a large daemon-run backfill)",
    )
    parser.add_argument(
        "--instance-settings", action="store_true", help="also run the settings variants"
    )
    parser.add_argument("--settings-tasks", type=int, default=2_000)
    parser.add_argument(
        "--only",
        choices=["materialize", "backfill", "settings", "scale"],
        action="append",
        help="run only these parts (repeatable)",
    )
    parser.add_argument("--page-bytes", type=int, default=20_000)
    parser.add_argument(
        "--select",
        default="scrape",
        help="materialize part: what ours runs (e.g. scrape,validation,pages: the chain against"
        " the floor's one trivial asset, as a small crawl's run)",
    )
    parser.add_argument("--tmp-dir", default=None, help="where temporary homes go")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--json", metavar="PATH", help="write the figures to PATH as JSON")
    args = parser.parse_args(argv)
    if args.backfill_tasks is None:
        args.backfill_tasks = args.tasks

    parts = args.only or ["materialize", "backfill"] + (
        ["settings"] if args.instance_settings else []
    )
    report: dict[str, Any] = {
        "config": {
            "tasks": args.tasks,
            "rounds": args.rounds,
            "backfill_tasks": args.backfill_tasks,
            "settings_tasks": args.settings_tasks,
            "page_bytes": args.page_bytes,
            "parts": parts,
            **machine_info(),
        }
    }
    os.chdir(REPO)
    started = time.perf_counter()
    with temp_root("bench-dagster-", args.tmp_dir, keep=args.keep) as root:
        if "materialize" in parts:
            part_materialize(args, root, report)
        if "backfill" in parts:
            part_backfill(args, root, report)
        if "settings" in parts:
            part_settings(args, root, report)
        if "scale" in parts:
            part_scale(args, root, report)
    report["total_seconds"] = time.perf_counter() - started
    print(f"\nbench_dagster took {report['total_seconds']:.0f} s")
    write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
