"""The main job: serve the bundled site, add its pages as tasks, run the executor assets
through the real `dagster` CLI on the embedded defaults, crawl the site's link graph from one
seed (`scrapeflow crawl`), and print the DuckDB summary."""

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from scrapeflow_dagster.dagster_cli import DEFINITIONS_MODULE, materialize_range_command
from scrapeflow_dagster.defs.assets import executor_assets
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.instance import ensure_dagster_home

# Every executor asset in one run: each task goes down the chain in one pass.
CHAIN = ",".join(asset.key.to_user_string() for asset in executor_assets)
# 13 pages within depth 2 of /graph/0, in one run: the crawl in well under a minute.
CRAWL_DEPTH = 2


def _wait_for(url: str, timeout_seconds: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the local site did not answer at {url}") from None
            time.sleep(0.1)


def write_demo_tasks(path: Path, base_url: str, pages: int) -> int:
    """A task file: mostly pages with a transient fault mix, plus a few permanent failures.
    Returns how many tasks it holds."""
    lines = ["key,url"]
    lines += [f"demo-{n:05d},{base_url}/mixed/{n}" for n in range(pages)]
    lines += [f"demo-missing-{n},{base_url}/status/404" for n in range(3)]
    lines += [f"demo-captcha-{n},{base_url}/captcha" for n in range(2)]
    path.write_text("\n".join(lines) + "\n")
    return len(lines) - 1


def run_demo(*, pages: int = 300, port: int = 8765) -> int:
    """Run the demo; returns 0 when every step ran (task failures are expected and shown)."""
    home = ensure_dagster_home()
    layout = DataLayout.from_env().ensure()
    env = {**os.environ, "DAGSTER_HOME": str(home), "SCRAPEFLOW_DATA_DIR": str(layout.root)}
    base_url = f"http://127.0.0.1:{port}"
    site = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "scrapeflow_dagster.cli",
            "site",
            "--port",
            str(port),
            "--pages",
            str(max(pages, 10)),
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        _wait_for(f"{base_url}/health")
        tasks_file = layout.root / "demo-tasks.csv"
        total = write_demo_tasks(tasks_file, base_url, pages)
        print(f"== adding tasks from {tasks_file} (Dagster home {home})", flush=True)
        subprocess.run(
            [sys.executable, "-m", "scrapeflow_dagster.cli", "tasks", "add", str(tasks_file)],
            env=env,
            check=True,
        )
        first, last = "demo-00000", "demo-captcha-1"
        print(
            f"== dagster asset materialize --select {CHAIN} --partition-range {first}...{last}",
            flush=True,
        )
        started = time.monotonic()
        done = subprocess.run(
            materialize_range_command(CHAIN, first, last, tasks=total),
            env=env,
            capture_output=True,
            text=True,
        )
        outcome = "every task succeeded" if done.returncode == 0 else "some tasks failed"
        print(f"   {outcome} ({time.monotonic() - started:.1f} s)", flush=True)
        seeds = layout.root / "demo-seeds.txt"
        seeds.write_text(f"{base_url}/graph/0\n")
        print(f"== scrapeflow crawl {seeds} --max-depth {CRAWL_DEPTH}", flush=True)
        subprocess.run(
            [sys.executable, "-m", "scrapeflow_dagster.cli", "crawl", str(seeds)]
            + ["--max-depth", str(CRAWL_DEPTH)],
            env=env,
            check=True,
        )
        # Twice: its Plots tab draws each figure as a line over the two materialisations.
        print("== dagster asset materialize --select crawl_report (twice)", flush=True)
        for _ in range(2):
            subprocess.run(
                [sys.executable, "-m", "dagster", "asset", "materialize", "-m", DEFINITIONS_MODULE]
                + ["--select", "crawl_report"],
                env=env,
                capture_output=True,
                check=True,
            )
        print("== status files (scrapeflow status)", flush=True)
        subprocess.run([sys.executable, "-m", "scrapeflow_dagster.cli", "status"], env=env)
        print("== DuckDB summary (scrapeflow db summary)", flush=True)
        subprocess.run(
            [sys.executable, "-m", "scrapeflow_dagster.cli", "db", "summary"], env=env, check=True
        )
        query = (
            f"import duckdb; print(duckdb.connect('{layout.db_path}', read_only=True)"
            ".sql('SELECT depth, outcome, count(*) FROM frontier GROUP BY ALL ORDER BY ALL'))"
        )
        print(f'\nQuery it yourself (read-only, close it soon): .venv/bin/python -c "{query}"')
        # Dagster wants an absolute DAGSTER_HOME.
        print(
            f"Open the UI: DAGSTER_HOME={home} SCRAPEFLOW_DATA_DIR={layout.root} "
            ".venv/bin/dagster dev -h 127.0.0.1 -w workspace.yaml, then http://127.0.0.1:3000:\n"
            "  Assets > scrape > Partitions: each task's state (the 404s and captchas failed,\n"
            "    with their reason in the partition's events; validation and pages missing)\n"
            "  Assets > crawl_report > Plots: success %, pages, p95 fetch time per report\n"
            "  Runs: the chain run and the crawl's run; Automation: the inbox and retry\n"
            "    sensors (running), the frontier sensor and the schedules (off)"
        )
        return 0
    finally:
        site.terminate()
        site.wait(timeout=10)
