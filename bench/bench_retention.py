"""What the Dagster home keeps per task, with and without retention (issue 42, target 2).

    .venv/bin/python -m bench.bench_retention                  # 300 tasks, SQLite and Postgres
    .venv/bin/python -m bench.bench_retention --tasks 100 --refreshes 2 --json out.json
    .venv/bin/python -m bench.bench_retention --backends pg --all-before --tasks 10000

For each backend (SQLite in the home; Postgres on 127.0.0.1:5432 when it answers) and each
mode (plain: the home `scrapeflow home init` writes; retention: the same with a `retention:`
block of no grace, and `scrapeflow home prune` after every run; with `--stock`, stock: lean
writes off, every row stock Dagster writes; with `--all-before`, a second Postgres retention
home writing every planned row before the run, the baseline of `planned_paced`), in a fresh
home: `scrapeflow
tasks add` (one task in 30 is a 404), one chain run (`dagster asset materialize --select
scrape,validation,pages`), then forced refreshes. Measured after each run: the home's bytes
per task (SQLite: every file of the home; Postgres: the database's growth since before the
first run). Printed: KB/task after 1 run and after the last refresh, last / first for each
mode (target with retention: <= 1.2), and retention / plain after the last refresh.
"""

import argparse
import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.dagster.cli_runs import OURS_MODULE, materialize_cmd
from bench.lib.homes import bench_env, temp_root
from bench.lib.repo import PYTHON
from bench.lib.site import Site
from scrapeflow_dagster.instance import dagster_yaml
from scrapeflow_dagster.storage.batches.lean_writes import (
    POSTGRES_LEAN_WRITES,
    STOCK_WRITES,
    LeanWrites,
    lean_writes_yaml,
)
from scrapeflow_dagster.storage.retention.prune import RetentionPolicy, retention_yaml

ASSETS = "scrape,validation,pages"
FORCED = {"ops": {"executor_chain": {"config": {"force": True}}}}
# Superseded rows go at once; run logs are kept their default 7 days, as a daily refresh keeps
# them (each refresh leaves its run's log shard).
NO_GRACE = RetentionPolicy(superseded_grace_seconds=0)
TARGET_RATIO = 1.2


def _tasks_file(root: Path, site_url: str, n: int) -> tuple[Path, list[str]]:
    from scrapeflow_dagster.engine.tasks.intake import TaskSpec, read_task_file

    path = root / "tasks.txt"
    lines = [
        f"{site_url}/status/404?n={i}" if i % 30 == 7 else f"{site_url}/page/{i}" for i in range(n)
    ]
    path.write_text("\n".join(lines) + "\n")
    keys = [item.key for item in read_task_file(path) if isinstance(item, TaskSpec)]
    return path, keys


def _home(
    root: Path, name: str, *, retention: bool, url: str | None, lean: LeanWrites | None
) -> Path:
    home = root / name
    home.mkdir(parents=True)
    text = dagster_yaml(home, postgres=url)
    marker = "EventLogStorage\n  config:\n"
    if retention:
        text = text.replace(marker, marker + retention_yaml(NO_GRACE), 1)
    if lean is not None:
        text = text.replace(marker, marker + lean_writes_yaml(lean), 1)
    (home / "dagster.yaml").write_text(text)
    return home


def _size(home: Path, url: str | None) -> int:
    if url is None:
        return sum(path.stat().st_size for path in home.rglob("*") if path.is_file())
    import psycopg2

    dsn = url.replace("postgresql+psycopg2://", "postgresql://", 1)
    with psycopg2.connect(dsn) as conn, conn.cursor() as cursor:
        cursor.execute("SELECT pg_database_size(current_database())")
        return int(cursor.fetchone()[0])


def _run(command: list[str], env: dict[str, str], cwd: Path) -> None:
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    if done.returncode not in (0, 1):  # 1: some tasks failed, as planned
        raise RuntimeError(f"{' '.join(command[:6])}... failed:\n{done.stderr[-3000:]}")


def measure(
    root: Path,
    site_url: str,
    n: int,
    refreshes: int,
    *,
    retention: bool,
    url: str | None,
    stock: bool = False,
    all_before: bool = False,
) -> dict[str, Any]:
    """One home through 1 + `refreshes` runs; its bytes per task after each (`stock`: with
    lean writes off, every row stock Dagster writes; `all_before`: Postgres writing every
    planned row before the run, as before `planned_paced`)."""
    mode = "stock" if stock else "retention" if retention else "plain"
    lean = STOCK_WRITES if stock else None
    if all_before:
        mode = f"{mode}-all-before"
        lean = replace(POSTGRES_LEAN_WRITES, planned_rows_before_run=None)
    name = f"{'pg' if url else 'sqlite'}-{mode}"
    folder = root / name
    folder.mkdir()
    home = _home(folder, "home", retention=retention, url=url, lean=lean)
    env = bench_env(home, folder / "data")
    tasks_file, keys = _tasks_file(folder, site_url, n)
    _run([PYTHON, "-m", "scrapeflow_dagster.cli", "tasks", "add", str(tasks_file)], env, folder)
    empty = _size(home, url) if url else 0
    per_task: list[float] = []
    data_per_task: list[float] = []
    run_seconds: list[float] = []
    started = time.perf_counter()
    for number in range(1 + refreshes):
        run_started = time.perf_counter()
        _run(materialize_cmd(OURS_MODULE, ASSETS, keys, FORCED if number else None), env, folder)
        run_seconds.append(time.perf_counter() - run_started)
        if retention:
            _run([PYTHON, "-m", "scrapeflow_dagster.cli", "home", "prune"], env, folder)
            # The data folder's history too: each task's current state stays (`db prune`).
            _run(
                [PYTHON, "-m", "scrapeflow_dagster.cli", "db", "prune", "--older-than", "0"],
                env,
                folder,
            )
        per_task.append((_size(home, url) - empty) / len(keys))
        data_per_task.append(_size(folder / "data", None) / len(keys))
    return {
        "name": name,
        "tasks": len(keys),
        "bytes_per_task": per_task,
        "last_over_first": per_task[-1] / per_task[0],
        "data_bytes_per_task": data_per_task,
        "data_last_over_first": data_per_task[-1] / data_per_task[0],
        "seconds": time.perf_counter() - started,
        "run_seconds": run_seconds,
    }


def _postgres_databases() -> Any:
    try:
        from bench.dagster.postgres import fresh_database

        with fresh_database("probe"):
            pass
    except Exception as exc:  # no server, no psycopg2: SQLite only, said below
        print(f"Postgres left out: {exc!r}")
        return None
    return fresh_database


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--refreshes", type=int, default=5)
    parser.add_argument("--tmp-dir", default=None, help="where the homes go (e.g. /dev/shm)")
    parser.add_argument("--json", default=None)
    parser.add_argument(
        "--stock", action="store_true", help="also a home with lean writes off (stock rows)"
    )
    parser.add_argument(
        "--all-before",
        action="store_true",
        help="also Postgres homes writing every planned row before the run (the baseline)",
    )
    parser.add_argument(
        "--backends", default="sqlite,pg", help="comma-separated: sqlite, pg (default both)"
    )
    parser.add_argument(
        "--modes",
        default="plain,retention",
        help="comma-separated: plain (no retention), retention (default both)",
    )
    args = parser.parse_args(argv)
    backends = set(args.backends.split(","))

    results: list[dict[str, Any]] = []
    databases = _postgres_databases() if "pg" in backends else None
    with temp_root("bench-retention-", args.tmp_dir) as root, Site(args.tasks, 5000) as site:
        modes = [(False, False)] if "plain" in args.modes.split(",") else []
        modes += [(False, True)] if "retention" in args.modes.split(",") else []
        modes += [(True, False)] if args.stock else []
        for stock, retention in modes:
            options = {"retention": retention, "stock": stock}
            if "sqlite" in backends:
                results.append(
                    measure(root, site.url, args.tasks, args.refreshes, url=None, **options)
                )
            if databases is not None:
                with databases("retention") as url:
                    results.append(
                        measure(root, site.url, args.tasks, args.refreshes, url=url, **options)
                    )
                if args.all_before:
                    with databases("retention_all_before") as url:
                        results.append(
                            measure(
                                root,
                                site.url,
                                args.tasks,
                                args.refreshes,
                                url=url,
                                all_before=True,
                                **options,
                            )
                        )
    by_name = {r["name"]: r for r in results}
    print(f"\nhome KB per task, {args.tasks} tasks, 1 run then {args.refreshes} forced refreshes")
    for r in results:
        first, last = r["bytes_per_task"][0] / 1024, r["bytes_per_task"][-1] / 1024
        target = f" (target <= {TARGET_RATIO})" if "retention" in r["name"] else ""
        print(
            f"  {r['name']:<18} after 1: {first:6.1f}  after {1 + args.refreshes}: {last:6.1f}"
            f"  last / first {r['last_over_first']:.2f}{target}  ({r['seconds']:.0f} s)"
        )
        print(f"    runs: {' / '.join(f'{s:.1f}' for s in r['run_seconds'])} s")
        data = r["data_bytes_per_task"]
        print(
            f"    data folder after 1: {data[0] / 1024:6.1f}  after {1 + args.refreshes}:"
            f" {data[-1] / 1024:6.1f}  last / first {r['data_last_over_first']:.2f}"
        )
    summary: dict[str, Any] = {}
    for backend in ("sqlite", "pg"):
        plain, kept = by_name.get(f"{backend}-plain"), by_name.get(f"{backend}-retention")
        if kept:  # the target, with or without the home without retention beside it
            summary[backend] = {
                "retention_last_over_first": kept["last_over_first"],
                "data_last_over_first": kept["data_last_over_first"],
                "target_ok": kept["last_over_first"] <= TARGET_RATIO,
            }
        if plain and kept:
            ratio = kept["bytes_per_task"][-1] / plain["bytes_per_task"][-1]
            summary[backend]["retention_over_plain"] = ratio
            summary[backend]["plain_last_over_first"] = plain["last_over_first"]
            print(f"  {backend}: retention / plain after the last refresh: {ratio:.2f}")
        stock_home = by_name.get(f"{backend}-stock")
        if plain and stock_home:
            lean = plain["bytes_per_task"][0] / stock_home["bytes_per_task"][0]
            summary.setdefault(backend, {})["lean_over_stock_one_run"] = lean
            print(f"  {backend}: one run, lean writes / stock rows: {lean:.2f}")
        for mode, home in (("plain", plain), ("retention", kept)):
            all_before = by_name.get(f"{backend}-{mode}-all-before")
            if home and all_before:
                first = home["bytes_per_task"][0] / all_before["bytes_per_task"][0]
                last = home["bytes_per_task"][-1] / all_before["bytes_per_task"][-1]
                summary.setdefault(backend, {})[f"{mode}_paced_over_all_before"] = [first, last]
                print(
                    f"  {backend} {mode}: planned rows paced / all before the run:"
                    f" {first:.2f} after 1 run, {last:.2f} after the last"
                )
    if args.json:
        Path(args.json).write_text(
            json.dumps({"config": vars(args), "results": results, "summary": summary}, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
