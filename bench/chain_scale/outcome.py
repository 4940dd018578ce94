"""What a run of the chain left: the run and each asset's materialised partitions (instance
queries), `scrapeflow status` through the CLI, and the bytes of a folder."""

import statistics
import subprocess
from pathlib import Path
from typing import Any

from bench.bench_status import table_of
from bench.dagster.event_log import open_instance
from bench.lib.measured import run_measured
from bench.lib.repo import PYTHON
from scrapeflow_dagster.engine.history.counting.status_labels import value_label

CHAIN = ("scrape", "validation", "pages")


def du_bytes(path: Path) -> dict[str, int]:
    """`path`'s bytes: apparent (file sizes) and allocated (disk blocks), as du counts them."""
    out: dict[str, int] = {}
    for name, flags in (("apparent", ["--apparent-size"]), ("allocated", [])):
        done = subprocess.run(
            ["du", "-s", "-B1", *flags, str(path)], capture_output=True, text=True, check=True
        )
        out[name] = int(done.stdout.split()[0])
    return out


def materialised(home: Path, keys: list[str]) -> dict[str, Any]:
    """The latest run's status and Dagster's timing of it, and per asset how many of `keys`
    are materialised (and how many partitions that are not among them)."""
    import dagster as dg

    wanted = set(keys)
    out: dict[str, Any] = {"assets": {}}
    with open_instance(home) as instance:
        records = instance.get_run_records(limit=1)
        if records:
            record = records[0]
            out["run_status"] = record.dagster_run.status.value
            if record.start_time is not None and record.end_time is not None:
                out["run_seconds"] = record.end_time - record.start_time
        for asset in CHAIN:
            done = instance.get_materialized_partitions(dg.AssetKey(asset))
            out["assets"][asset] = {
                "materialized": len(done & wanted),
                "missing": len(wanted - done),
                "extra": len(done - wanted),
            }
    out["all_materialized"] = all(
        a["missing"] == 0 and a["extra"] == 0 for a in out["assets"].values()
    )
    return out


def status_exact(output: str, n: int) -> bool | None:
    """Whether `scrapeflow status` printed N SUCCESS for each asset of the chain and nothing
    else (None when its table cannot be read)."""
    try:
        table = table_of(output)
    except (IndexError, ValueError):
        return None
    return table == {(value_label("SUCCESS"), asset): n for asset in CHAIN}


def measure_status(env: dict[str, str], cwd: Path, rounds: int) -> dict[str, Any]:
    """`scrapeflow status` through the CLI, `rounds` times: seconds, peak RSS, its table."""
    command = [PYTHON, "-m", "scrapeflow_dagster.cli", "status"]
    runs = [
        # Sampled every 20 ms: a command of a second would slip between 200 ms samples.
        run_measured(
            command,
            env=env,
            label="scrapeflow status",
            cwd=cwd,
            timeout=3600,
            check=False,
            sample_interval=0.02,
        )
        for _ in range(rounds)
    ]
    peaks = [p.peak_rss_mib for run in runs for p in run.processes]
    return {
        "all_seconds": [run.seconds for run in runs],
        "median_seconds": statistics.median(run.seconds for run in runs),
        "worst_seconds": max(run.seconds for run in runs),
        "peak_rss_mib": max(peaks, default=None),
        "returncodes": [run.returncode for run in runs],
        "output": runs[0].stdout_tail.strip(),
    }
