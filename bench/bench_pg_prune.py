"""What retention costs on a large Postgres home: `scrapeflow home prune` and the retention
sensor's ticks (issue 42).

    .venv/bin/python -m bench.bench_pg_prune                     # 20,000 tasks, copied to 1M
    .venv/bin/python -m bench.bench_pg_prune --tasks 2000 --scale-to 20000 --json out.json

In a fresh database on 127.0.0.1:5432, a Postgres home with a `retention:` block (no grace, run
logs kept): `scrapeflow tasks add` (one task in 30 a 404), a chain run and a forced refresh
(`dagster asset materialize --select scrape,validation,pages`), so every kind of row is there
as runs write it, superseded ones included, and the indexes as the runs' deleted planned rows
left them. With `--scale-to N`, the asset rows are then copied under new partition names until
the table holds what N tasks' two runs leave (`ANALYZE` after; the copies' timestamps are the
originals'). Measured, in order:

- the retention sensor's ticks (at most `--max-ticks`), evaluated as the daemon evaluates them
  (in this process, the sensor's 20 s budget for deleting; Dagster gives an evaluation 60 s),
  each printed as it ends with the rows deleted so far, until one with nothing new to delete
  and no index to rebuild (what every later tick of an idle home pays);
- `scrapeflow home prune` (the CLI: no budget) after it.

Printed: each one's seconds, rows deleted, indexes rebuilt, and the event log's bytes per task.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import dagster as dg
import psycopg2

from bench.bench_retention import ASSETS, FORCED, _home, _run, _tasks_file
from bench.dagster.cli_runs import OURS_MODULE, materialize_cmd
from bench.dagster.postgres import fresh_database
from bench.lib.homes import bench_env, temp_root
from bench.lib.repo import PYTHON
from bench.lib.site import Site
from scrapeflow_dagster.defs.sensors.retention import build_retention_sensor

# Dagster's limit on a sensor evaluation (DAGSTER_SENSOR_GRPC_TIMEOUT_SECONDS's default).
EVALUATION_LIMIT_SECONDS = 60.0

_COPY = """
INSERT INTO event_logs (run_id, event, dagster_event_type, timestamp, step_key, asset_key,
                        partition)
SELECT e.run_id, e.event, e.dagster_event_type, e.timestamp, e.step_key, e.asset_key,
       e.partition || '~' || g
FROM generate_series(%(first)s, %(last)s) AS g
CROSS JOIN (SELECT * FROM event_logs WHERE partition IS NOT NULL AND id <= %(top)s) AS e
ORDER BY g, e.id
"""


def _dsn(url: str) -> str:
    return url.replace("postgresql+psycopg2://", "postgresql://", 1)


def _scale(url: str, tasks: int, target: int) -> float:
    """Copy the asset rows under new partition names until they stand for `target` tasks;
    the seconds it took."""
    started = time.perf_counter()
    copies = max(0, target // tasks - 1)
    with closing(psycopg2.connect(_dsn(url))) as conn, conn.cursor() as cursor:
        cursor.execute("SELECT max(id) FROM event_logs")
        top = cursor.fetchone()[0]
        step = 10
        for first in range(1, copies + 1, step):
            last = min(copies, first + step - 1)
            cursor.execute(_COPY, {"first": first, "last": last, "top": top})
            conn.commit()
    with closing(psycopg2.connect(_dsn(url))) as conn:
        conn.autocommit = True  # VACUUM refuses to run in a transaction
        conn.cursor().execute("VACUUM (ANALYZE) event_logs")
    return time.perf_counter() - started


def _table_bytes(url: str) -> int:
    with closing(psycopg2.connect(_dsn(url))) as conn, conn.cursor() as cursor:
        cursor.execute(
            "SELECT pg_total_relation_size('event_logs')"
            " + pg_total_relation_size('asset_event_tags')"
        )
        return int(cursor.fetchone()[0])


def _deleted(url: str) -> int:
    """Rows deleted from `event_logs` since the database was made (Postgres's statistics)."""
    with closing(psycopg2.connect(_dsn(url))) as conn, conn.cursor() as cursor:
        cursor.execute("SELECT n_tup_del FROM pg_stat_user_tables WHERE relname = 'event_logs'")
        return int(cursor.fetchone()[0])


def _tick(home: Path, cursor: str | None) -> dict[str, Any]:
    """One evaluation of the retention sensor on `home`, as the daemon makes it."""
    os.environ["DAGSTER_HOME"] = str(home)
    sensor = build_retention_sensor()
    with dg.DagsterInstance.get() as instance:
        context = dg.build_sensor_context(instance=instance, cursor=cursor)
        started = time.perf_counter()
        result = sensor(context)
        seconds = time.perf_counter() - started
    message = str(result.skip_message) if isinstance(result, dg.SkipReason) else repr(result)
    return {"seconds": seconds, "message": message, "cursor": context.cursor}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=20_000, help="tasks run for real")
    parser.add_argument(
        "--scale-to", type=int, default=1_000_000, help="tasks the copied rows stand for"
    )
    parser.add_argument(
        "--max-ticks", type=int, default=40, help="sensor ticks at most (one evaluation each)"
    )
    parser.add_argument("--tmp-dir", default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    target = max(args.scale_to, args.tasks)

    out: dict[str, Any] = {"config": vars(args)}
    with (
        temp_root("bench-pg-prune-", args.tmp_dir) as root,
        Site(args.tasks, 5000) as site,
        fresh_database("prune") as url,
    ):
        home = _home(root, "home", retention=True, url=url, stock=False)
        assert "retention:" in (home / "dagster.yaml").read_text()
        env = bench_env(home, root / "data")
        tasks_file, keys = _tasks_file(root, site.url, args.tasks)
        _run([PYTHON, "-m", "scrapeflow_dagster.cli", "tasks", "add", str(tasks_file)], env, root)
        for number in range(2):
            started = time.perf_counter()
            _run(materialize_cmd(OURS_MODULE, ASSETS, keys, FORCED if number else None), env, root)
            out[f"run_{number + 1}_seconds"] = time.perf_counter() - started
        out["bytes_per_task_after_runs"] = _table_bytes(url) / args.tasks
        out["scale_seconds"] = _scale(url, args.tasks, target) if target > args.tasks else 0.0
        out["bytes_per_task_scaled"] = _table_bytes(url) / target

        ticks: list[dict[str, Any]] = []
        cursor = None
        while len(ticks) < args.max_ticks:
            tick = _tick(home, cursor)
            tick["deleted_so_far"] = _deleted(url)
            ticks.append(tick)
            print(
                f"tick {len(ticks)}: {tick['seconds']:.1f} s, rows deleted so far"
                f" {tick['deleted_so_far']:,}: {tick['message']}",
                flush=True,
            )
            idle = tick["message"].startswith("deleted no asset events")
            if tick["cursor"] == cursor and idle and "indexes rebuilt" not in tick["message"]:
                break  # a tick with nothing new: what every later tick of an idle home pays
            cursor = tick["cursor"]
        started = time.perf_counter()
        cli = subprocess.run(
            [PYTHON, "-m", "scrapeflow_dagster.cli", "home", "prune"],
            env=env,
            cwd=root,
            capture_output=True,
            text=True,
        )
        cli_seconds = time.perf_counter() - started
        out["ticks"] = ticks
        out["cli"] = {"seconds": cli_seconds, "rc": cli.returncode, "stdout": cli.stdout[-2000:]}
        out["bytes_per_task_end"] = _table_bytes(url) / target

    print(f"\nretention on a Postgres home of {target:,} tasks ({args.tasks:,} run for real)")
    print(f"  two chain runs: {out['run_1_seconds']:.0f} s, {out['run_2_seconds']:.0f} s")
    print(f"  rows copied to {target:,} tasks in {out['scale_seconds']:.0f} s")
    print(f"  event log before: {out['bytes_per_task_scaled'] / 1024:.2f} KB per task")
    for number, tick in enumerate(out["ticks"], 1):
        over = " (over Dagster's 60 s)" if tick["seconds"] > EVALUATION_LIMIT_SECONDS else ""
        print(f"  tick {number}: {tick['seconds']:.1f} s{over}: {tick['message']}")
    print(f"  `home prune` after: {cli_seconds:.1f} s (rc {cli.returncode})")
    print("    " + cli.stdout.strip().replace("\n", "\n    "))
    print(f"  event log after: {out['bytes_per_task_end'] / 1024:.2f} KB per task")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
