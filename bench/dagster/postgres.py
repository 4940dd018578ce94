"""Ours vs Dagster's stock floor on Postgres: `dagster asset materialize` over N partitions.

    .venv/bin/python -m bench.dagster.postgres                    # 10k tasks, one round
    .venv/bin/python -m bench.dagster.postgres --tasks 2000 --tmp-dir /dev/shm --json pg.json

The floor: `bench.floor_defs`' trivial asset in a home with stock dagster-postgres for runs,
events and schedules. Ours: `scrapeflow tasks add`, then `scrape` over the same number of local
pages in the home `scrapeflow home init --postgres URL` writes (batched event log). Each in a
fresh database on the server at 127.0.0.1:5432 (trust auth, user postgres), dropped afterwards;
--tmp-dir only moves the homes and scrapeflow's data folder (Postgres keeps its own disk).
Prints the speed-up floor/ours against the target, pages/s and Dagster events/s.
"""

import argparse
import os
import secrets
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import psycopg2
from psycopg2 import sql

from bench.dagster.cli_runs import measure_floor, measure_ours, write_tasks
from bench.dagster.targets import POSTGRES_SPEEDUP_TARGET
from bench.lib.homes import temp_root
from bench.lib.repo import REPO
from bench.lib.report import machine_info, print_table, write_json
from bench.lib.site import Site
from scrapeflow_dagster.instance import dagster_yaml

SERVER = {"host": "127.0.0.1", "port": 5432, "user": "postgres"}
STOCK_YAML = """telemetry:
  enabled: false
run_queue:
  max_concurrent_runs: 4
storage:
  postgres:
    postgres_url: "{url}"
"""


def _admin():  # type: ignore[no-untyped-def]
    conn = psycopg2.connect(dbname="postgres", connect_timeout=3, **SERVER)
    conn.autocommit = True  # CREATE / DROP DATABASE refuse to run in a transaction
    return conn


@contextmanager
def fresh_database(name: str) -> Iterator[str]:
    """A new database for one measurement, dropped afterwards; yields its SQLAlchemy URL."""
    database = f"bench_{name}_{secrets.token_hex(3)}"
    with closing(_admin()) as conn, conn.cursor() as cursor:
        cursor.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    try:
        yield f"postgresql+psycopg2://{SERVER['user']}@{SERVER['host']}:{SERVER['port']}/{database}"
    finally:
        with closing(_admin()) as conn, conn.cursor() as cursor:
            cursor.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database))
            )


def _rates(m: dict[str, Any], n: int) -> dict[str, float]:
    seconds = m["materialize"]["seconds"]
    return {
        "seconds": seconds,
        "pages_per_second": n / seconds,
        "events_per_second": (m["analysis"].get("events") or 0) / seconds,
    }


def part_postgres(args: argparse.Namespace, root: Path, report: dict[str, Any]) -> None:
    """Floor then ours on Postgres over --tasks partitions, --rounds times."""
    n = args.tasks
    print(f"\n== Postgres: stock floor vs ours (batched) over {n:,} partitions", flush=True)
    rounds: list[dict[str, Any]] = []
    with Site(pages=n, page_bytes=args.page_bytes) as site:
        tasks_file, keys_file, keys = write_tasks(root, site.url, n)
        for i in range(args.rounds):
            with fresh_database(f"floor{i}") as url:
                floor = measure_floor(
                    root, keys_file, keys, f"pg{i}", yaml=STOCK_YAML.format(url=url)
                )
            print(
                f"round {i + 1} floor: materialize {floor['materialize']['seconds']:.1f} s",
                flush=True,
            )
            with fresh_database(f"ours{i}") as url:
                home_yaml = dagster_yaml(root, postgres=url)
                ours = measure_ours(root, site, tasks_file, keys, f"pg{i}", yaml=home_yaml)
            print(
                f"round {i + 1} ours:  materialize {ours['materialize']['seconds']:.1f} s",
                flush=True,
            )
            rounds.append({"floor": floor, "ours": ours})
    rows = []
    for i, r in enumerate(rounds):
        for name in ("floor", "ours"):
            m, rates = r[name], _rates(r[name], n)
            rows.append(
                [
                    f"r{i + 1} {name}",
                    m["add"]["seconds"],
                    rates["seconds"],
                    rates["pages_per_second"],
                    m["analysis"].get("events"),
                    rates["events_per_second"],
                    m["analysis"].get("materialized"),
                    m["materialize"]["tree_peak_rss_mib"],
                    m["materialize"]["other_busy_cores"],
                ]
            )
    print_table(
        [
            "run",
            "add s",
            "materialize s",
            "parts/s",
            "events",
            "events/s",
            "materialized",
            "peak MiB",
            "others (cores)",
        ],
        rows,
        title=f"Postgres: materialize {n:,} partitions (floor: trivial asset, stock storage)",
    )
    floor_s = statistics.median(r["floor"]["materialize"]["seconds"] for r in rounds)
    ours_s = statistics.median(r["ours"]["materialize"]["seconds"] for r in rounds)
    summary = {
        "floor_mat": floor_s,
        "ours_mat": ours_s,
        "speedup": floor_s / ours_s,
        "speedup_ok": floor_s / ours_s >= POSTGRES_SPEEDUP_TARGET,
        "ours_pages_per_second": n / ours_s,
        "ours_events_per_second": statistics.median(
            _rates(r["ours"], n)["events_per_second"] for r in rounds
        ),
        "floor_events_per_second": statistics.median(
            _rates(r["floor"], n)["events_per_second"] for r in rounds
        ),
    }
    report["postgres"] = {"tasks": n, "rounds": rounds, "summary": summary}
    verdict = "PASS" if summary["speedup_ok"] else "FAIL"
    print(
        f"\nPostgres: ours {ours_s:.1f} s vs stock floor {floor_s:.1f} s:"
        f" {summary['speedup']:.1f}x faster (target >= {POSTGRES_SPEEDUP_TARGET:.0f}x: {verdict});"
        f" ours {summary['ours_pages_per_second']:.0f} pages/s,"
        f" {summary['ours_events_per_second']:.0f} events/s (floor"
        f" {summary['floor_events_per_second']:.0f} events/s)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--page-bytes", type=int, default=20_000)
    parser.add_argument("--tmp-dir", default=None, help="where temporary homes and data go")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--json", metavar="PATH", help="write the figures to PATH as JSON")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {"config": {"tasks": args.tasks, **machine_info()}}
    try:
        _admin().close()
    except psycopg2.OperationalError as exc:
        print(f"PostgreSQL not reachable on 127.0.0.1:5432: {exc}".strip())
        return 1
    os.chdir(REPO)
    started = time.perf_counter()
    with temp_root("bench-postgres-", args.tmp_dir, keep=args.keep) as root:
        part_postgres(args, root, report)
    report["total_seconds"] = time.perf_counter() - started
    print(f"\nbench.dagster.postgres took {report['total_seconds']:.0f} s")
    write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
