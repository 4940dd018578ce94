"""One size of the chain measured end to end: N tasks added, the chain run over them once in
one `dagster asset materialize`, and what it left checked and sized."""

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from bench.chain_scale.memory import TreeMemory, tree_figures
from bench.chain_scale.outcome import CHAIN, du_bytes, materialised, measure_status, status_exact
from bench.chain_scale.site_watch import FirstPage, page_requests, post
from bench.dagster.cli_runs import OURS_MODULE, cleanup, materialize_cmd, write_tasks
from bench.lib.homes import bench_env, make_home
from bench.lib.measured import run_measured
from bench.lib.repo import PYTHON
from bench.lib.site import Site

# Above this the site's request counts (a JSON of every path) cost more than they tell.
REQUESTS_CHECK_MAX_TASKS = 100_000


def _timeout(n: int, per_task: float) -> float:
    # Generous: a timeout should only ever end a stuck command, never a slow shared machine.
    return max(1800.0, per_task * n)


def measure_size(root: Path, n: int, args: argparse.Namespace) -> dict[str, Any]:
    """Add N tasks, run the chain over them once, check and size what it left; the figures."""
    sub = root / f"chain-{n}"
    cwd = sub / "cwd"  # Dagster reads .env from the working directory: never the repo's
    cwd.mkdir(parents=True)
    home = make_home(sub, "home", ours=True)
    data = sub / "data"
    env = bench_env(home, data)
    result: dict[str, Any] = {"tasks": n}
    with Site(pages=n, page_bytes=args.page_bytes) as site:
        assert site.proc is not None
        tasks_file, _keys_file, keys = write_tasks(sub, site.url, n)
        add_cmd = [PYTHON, "-m", "scrapeflow_dagster.cli", "tasks", "add", str(tasks_file)]
        with TreeMemory(exclude=[site.proc.pid]) as memory:
            add = run_measured(
                add_cmd,
                env=env,
                label="scrapeflow tasks add",
                cwd=cwd,
                timeout=_timeout(n, 0.01),
                extra_cpu=site.cpu_seconds,
            )
        result["add"] = tree_figures(add, memory)
        home_before = du_bytes(home)
        post(site.url + "/control/requests/reset")  # this run's requests only
        run_cmd = materialize_cmd(OURS_MODULE, ",".join(CHAIN), keys, None)
        with TreeMemory(exclude=[site.proc.pid]) as memory:
            t0 = time.perf_counter()
            with FirstPage(site.url, t0) as first:
                run = run_measured(
                    run_cmd,
                    env=env,
                    label="materialize the chain",
                    cwd=cwd,
                    timeout=_timeout(n, 0.2),
                    extra_cpu=site.cpu_seconds,
                    check=False,  # a failed run still has figures; it is reported not exact
                )
        result["run"] = tree_figures(run, memory)
        result["run"]["tasks_per_second"] = n / run.seconds
        result["run"]["first_request_seconds"] = first.first_request_seconds
        result["run"]["first_page_seconds"] = first.first_page_seconds
        # The rate once pages flow: without the fixed start (imports, planning), which
        # flatters a large size's N / wall against a small one's.
        if first.first_page_seconds is not None and run.seconds > first.first_page_seconds:
            steady = n / (run.seconds - first.first_page_seconds)
            result["run"]["tasks_per_second_after_first_page"] = steady
        if run.returncode != 0:
            result["run"]["stderr_tail"] = run.stderr_tail
            print(f"the run exited {run.returncode}:\n{run.stderr_tail}", file=sys.stderr)
        if n <= REQUESTS_CHECK_MAX_TASKS:
            result["requests"] = page_requests(site.url, n)
    home_after = du_bytes(home)
    result["exact"] = materialised(home, keys)
    result["status"] = measure_status(env, cwd, args.status_rounds)
    exact = result["exact"]
    exact["status_exact"] = status_exact(result["status"]["output"], n)
    exact["pages_all_once"] = result.get("requests", {}).get("pages_all_once")
    exact["ok"] = (
        run.returncode == 0
        and exact.get("run_status") == "SUCCESS"
        and exact["all_materialized"]
        and exact["status_exact"] is True
        and exact["pages_all_once"] is not False  # None: not checked at this size
    )
    data_bytes = du_bytes(data)
    result["bytes"] = {"home_before_run": home_before, "home": home_after, "data": data_bytes}
    result["per_task"] = {
        "home_run_apparent": (home_after["apparent"] - home_before["apparent"]) / n,
        "home_run_allocated": (home_after["allocated"] - home_before["allocated"]) / n,
        "home_total_apparent": home_after["apparent"] / n,
        "home_total_allocated": home_after["allocated"] / n,
        "data_apparent": data_bytes["apparent"] / n,
        "data_allocated": data_bytes["allocated"] / n,
    }
    if not args.keep:
        cleanup(sub)  # 1M tasks leave tens of GB: gone before the next size starts
    return result
