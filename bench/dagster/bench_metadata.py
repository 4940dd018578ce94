"""What per-partition metadata costs: `scrape` runs over N partitions with and without it.

Every materialised partition carries `url`, `attempts`, `http_status`, `size` and `md5` in
every run (`lib/executor_events.py`). Each round runs `scrape` in-process on fresh homes (the
embedded home `scrapeflow home init` writes: SQLite, batched asset events) over the same local
pages, once as shipped and once with `partition_metadata` returning nothing, for a run where
every task succeeds and a run with 1% failures (the step logs one materialisation per
partition either way). It prints wall and CPU time of the runs (the run is in this process;
CPU is the steadier figure on a shared machine) and the ratios with/without, measured in the
same run.

    .venv/bin/python -m bench.dagster.bench_metadata [--tasks 2000] [--rounds 2] [--json PATH]
"""

import argparse
import contextlib
import statistics
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg

from bench.lib.homes import make_home, temp_root
from bench.lib.report import print_table, write_json
from bench.lib.site import Site
from scrapeflow_dagster.defs.automation import RANGE_END_TAG, RANGE_START_TAG
from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.tasks.adding import add_tasks
from scrapeflow_dagster.engine.tasks.intake import build_task
from scrapeflow_dagster.lib import executor_events as executor_events_module
from scrapeflow_dagster.lib.partitions import add_task_partitions
from scrapeflow_dagster.lib.resources import ProxyProviderResource, StatusStoreResource
from scrapeflow_dagster.lib.scrape_settings import ScrapeSettingsResource

METADATA_KEYS = {"url", "attempts", "http_status", "size", "md5"}


@contextlib.contextmanager
def metadata_left_out(leave_out: bool) -> Iterator[None]:
    """While active with `leave_out`, executor assets give their partitions no metadata."""
    shipped = executor_events_module.partition_metadata
    if leave_out:
        executor_events_module.partition_metadata = lambda done: {}
    try:
        yield
    finally:
        executor_events_module.partition_metadata = shipped


def add_run_tasks(layout: DataLayout, instance: dg.DagsterInstance, rows: list[dict]) -> list[str]:
    """Store `rows` (key, url) through the engine's intake and add them as partitions."""
    specs = [build_task(row, Path("bench"), n) for n, row in enumerate(rows)]
    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        report = add_tasks(layout, specs, ledger=ledger)
    if report.errors:
        raise RuntimeError(f"bench tasks refused: {report.errors[:3]}")
    add_task_partitions(instance, report.keys)
    return report.keys


def one_run(root: Path, name: str, site_url: str, n: int, *, failures: bool, metadata: bool):
    """One `scrape` run over `n` fresh partitions; returns seconds and what the events carry."""
    home = make_home(root, name, ours=True)
    layout = DataLayout(root / name / "data").ensure()

    def url(i: int) -> str:
        return f"{site_url}/status/404" if failures and i % 100 == 7 else f"{site_url}/page/{i}"

    rows = [{"key": f"t-{i:06d}", "url": url(i)} for i in range(n)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from scrapeflow_dagster.defs.assets import build_executor_assets
        from scrapeflow_dagster.lib.executor_assets import executor_asset

        # One step: the metadata cost of the unsharded asset, which this bench patches.
        executor_assets = build_executor_assets(executor_asset)
    resources = {
        "scrape_settings": ScrapeSettingsResource(max_attempts=1),
        "status_store": StatusStoreResource(data_dir=str(layout.root)),
        "proxy_provider": ProxyProviderResource(),
    }
    with dg.DagsterInstance.from_config(str(home)) as instance:
        keys = add_run_tasks(layout, instance, rows)
        with metadata_left_out(not metadata):
            started, cpu_started = time.perf_counter(), time.process_time()
            result = dg.materialize(
                executor_assets,
                selection=["scrape"],
                instance=instance,
                tags={RANGE_START_TAG: keys[0], RANGE_END_TAG: keys[-1]},
                resources=resources,
                # Dagster's console log of every event would be measured too.
                run_config={"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}},
                raise_on_error=False,
            )
            seconds = time.perf_counter() - started
            cpu_seconds = time.process_time() - cpu_started
        events = result.asset_materializations_for_node("scrape")
        carrying = sum(1 for m in events if METADATA_KEYS <= set(m.metadata))
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "materialized": len(events),
        "with_metadata": carrying,
        "run_failed": not result.success,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", default=None, help="write the figures to this JSON file")
    args = parser.parse_args()
    n = args.tasks
    print(f"== per-partition metadata: scrape over {n:,} partitions, {args.rounds} round(s)")
    runs: dict[str, list[dict[str, Any]]] = {}
    with Site(pages=n, page_bytes=2000) as site, temp_root("bench-metadata-") as root:
        for i in range(args.rounds):
            for failures in (False, True):
                # Alternated, so that load from other processes hits both alike.
                for metadata in (False, True) if i % 2 == 0 else (True, False):
                    label = f"{'1% failures' if failures else 'all succeed'}, " + (
                        "with metadata" if metadata else "without"
                    )
                    name = f"r{i}-{'fail' if failures else 'ok'}-{'meta' if metadata else 'none'}"
                    run = one_run(root, name, site.url, n, failures=failures, metadata=metadata)
                    print(
                        f"round {i + 1} {label}: {run['seconds']:.2f} s,"
                        f" CPU {run['cpu_seconds']:.2f} s",
                        flush=True,
                    )
                    runs.setdefault(label, []).append(run)
    rows, summary = [], {}
    for failures in ("all succeed", "1% failures"):
        without, with_meta = runs[f"{failures}, without"], runs[f"{failures}, with metadata"]
        figures = {}
        for measure in ("seconds", "cpu_seconds"):
            bare = statistics.median(r[measure] for r in without)
            carrying = statistics.median(r[measure] for r in with_meta)
            figures[measure] = (bare, carrying, carrying / bare)
        summary[failures] = {
            "without_s": figures["seconds"][0],
            "with_s": figures["seconds"][1],
            "ratio": figures["seconds"][2],
            "without_cpu_s": figures["cpu_seconds"][0],
            "with_cpu_s": figures["cpu_seconds"][1],
            "cpu_ratio": figures["cpu_seconds"][2],
        }
        rows.append(
            [
                failures,
                *figures["seconds"],
                *figures["cpu_seconds"],
                1e3 * (figures["cpu_seconds"][1] - figures["cpu_seconds"][0]) / n,
                f"{with_meta[-1]['with_metadata']}/{with_meta[-1]['materialized']}",
                f"{without[-1]['with_metadata']}/{without[-1]['materialized']}",
            ]
        )
    print_table(
        [
            "run",
            "without s",
            "with s",
            "with/without",
            "CPU without s",
            "CPU with s",
            "CPU with/without",
            "CPU ms/partition",
            "carrying it (with)",
            "(without)",
        ],
        rows,
        title=f"scrape over {n:,} partitions, in-process run (median of {args.rounds})",
    )
    write_json(args.json, {"tasks": n, "runs": runs, "summary": summary})


if __name__ == "__main__":
    main()
