"""One add + `dagster asset materialize` through the CLI, ours or the floor, in a fresh home.

(a) floor: `bench.floor_defs`' trivial asset, partitions added by `python -m bench.floor_defs
add`; (b) ours: `python -m scrapeflow_dagster.cli tasks add tasks.txt`, then the same CLI on
`scrape`. Also the task files every part writes, and the cleanup between measurements.
"""

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from bench.dagster.event_log import run_analysis
from bench.lib.homes import bench_env, make_home
from bench.lib.measured import run_measured
from bench.lib.repo import PYTHON
from bench.lib.site import Site

FLOOR_MODULE = "bench.floor_defs"
OURS_MODULE = "scrapeflow_dagster.definitions"


def write_tasks(root: Path, site_url: str, n: int) -> tuple[Path, Path, list[str]]:
    """The task file (N URLs), the keys file for the floor, and the keys in partition order."""
    from scrapeflow_dagster.engine.tasks.intake import TaskSpec, read_task_file

    tasks_file = root / "tasks.txt"
    with tasks_file.open("w") as f:
        for i in range(n):
            f.write(f"{site_url}/page/{i}\n")
    keys = [item.key for item in read_task_file(tasks_file) if isinstance(item, TaskSpec)]
    if len(keys) != n:
        raise RuntimeError(f"expected {n} valid tasks, got {len(keys)}")
    keys_file = root / "keys.txt"
    keys_file.write_text("\n".join(keys) + "\n")
    return tasks_file, keys_file, keys


def materialize_cmd(module: str, asset: str, keys: list[str], config: dict[str, Any] | None):
    """Exactly a user's plain `dagster asset materialize` over `keys`: each code location runs
    its own default executor (ours: sharded, step processes forked from a preloaded server;
    the floor's: Dagster's stock default). Not `materialize_range_command`, which picks the
    in-process executor for one-shard runs of the shipped module, as `scrapeflow` does."""
    command = [sys.executable, "-m", "dagster", "asset", "materialize", "-m", module]
    command += ["--select", asset, "--partition-range", f"{keys[0]}...{keys[-1]}"]
    if config:
        command += ["--config-json", json.dumps(config)]
    return command


def _timeout(partitions: int) -> float:
    """Generous: Dagster's SQLite storage takes ~25 ms per partition here, 200 ms allowed."""
    return max(1800.0, 0.2 * partitions)


def _exit_phase(analysis: dict[str, Any], exited_wall: float) -> None:
    end = analysis.get("run_end_wall")
    if end is not None and "phases" in analysis:
        analysis["phases"]["run_end_to_cli_exit"] = exited_wall - end


def cleanup(*paths: Path) -> None:
    """Delete the folders of a finished measurement."""
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)
    os.sync()  # the next measurement should not pay for this one's write-back


def _home(root: Path, name: str, yaml: str | None, *, ours: bool) -> Path:
    # `yaml`: the home's whole dagster.yaml (a Postgres home); else the SQLite one of `ours`.
    if yaml is None:
        return make_home(root, name, ours=ours)
    home = root / name
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text(yaml)
    return home


def measure_floor(
    root: Path, keys_file: Path, keys: list[str], tag: str, *, yaml: str | None = None
) -> dict[str, Any]:
    """The floor's keys added as partitions, then its trivial asset materialised over them
    (in Dagster's stock SQLite home, or one whose dagster.yaml is `yaml`)."""
    home = _home(root, f"floor-{tag}", yaml, ours=False)
    env = bench_env(home)
    add = run_measured([PYTHON, "-m", FLOOR_MODULE, "add", str(keys_file)], env=env, label="add")
    started = time.time()
    mat = run_measured(
        materialize_cmd(FLOOR_MODULE, "trivial", keys, None),
        env=env,
        label="mat",
        timeout=_timeout(len(keys)),
    )
    analysis = run_analysis(home, "trivial", started)
    _exit_phase(analysis, started + mat.seconds)
    mat.stdout_tail = mat.stderr_tail = ""
    cleanup(home)
    return {"add": add.to_dict(), "materialize": mat.to_dict(), "analysis": analysis}


def measure_ours(
    root: Path,
    site: Site,
    tasks_file: Path,
    keys: list[str],
    tag: str,
    *,
    config: dict[str, Any] | None = None,
    extra_env: dict[str, str] | None = None,
    home_parent: Path | None = None,
    yaml: str | None = None,
    select: str = "scrape",
) -> dict[str, Any]:
    """`scrapeflow tasks add` of the task file, then `select` (`scrape`, or e.g. the chain
    `scrape,validation,pages`) materialised over its keys (in the SQLite home `scrapeflow home
    init` writes, or one whose dagster.yaml is `yaml`)."""
    home = _home(home_parent or root, f"ours-{tag}", yaml, ours=True)
    data = root / f"data-{tag}"
    env = bench_env(home, data, extra_env)
    add = run_measured(
        [PYTHON, "-m", "scrapeflow_dagster.cli", "tasks", "add", str(tasks_file)],
        env=env,
        label="scrapeflow tasks add",
        extra_cpu=site.cpu_seconds,
    )
    started = time.time()
    mat = run_measured(
        materialize_cmd(OURS_MODULE, select, keys, config),
        env=env,
        label=f"materialize {select}",
        extra_cpu=site.cpu_seconds,
        timeout=_timeout(len(keys)),
    )
    analysis = run_analysis(home, "scrape", started)
    _exit_phase(analysis, started + mat.seconds)
    mat.stdout_tail = mat.stderr_tail = ""
    cleanup(home, data)
    return {"add": add.to_dict(), "materialize": mat.to_dict(), "analysis": analysis}


def role_peak_rss(m: dict[str, Any], prefix: str) -> float | None:
    """The largest peak RSS (MiB) among the processes of `m` whose role starts with `prefix`."""
    peaks = [v["peak_rss_mib"] for k, v in m["roles"].items() if k.startswith(prefix)]
    return max(peaks) if peaks else None
