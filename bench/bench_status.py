"""How long `scrapeflow status` takes at 10,000 and 100,000 tasks (1,000,000 with --million),
against the old summary that read every status file.

    .venv/bin/python -m bench.bench_status                       # 10k and 100k
    .venv/bin/python -m bench.bench_status --million --json status.json
    .venv/bin/python -m bench.bench_status --sizes 1000 --old-max-tasks 1000   # a smoke run
    .venv/bin/python -m bench.bench_status --million --keep --tmp-dir /tmp    # then, again:
    .venv/bin/python -m bench.bench_status --million --reuse /tmp/bench-status-XXXX
    .venv/bin/python -m bench.bench_status --sizes 1000000 --history 4    # after 4 more runs

Each size gets a fresh data folder, built directly (not through runs, which would take hours
at a million): per task a status file as the engine writes it (`scrape`, then `validation` and
`pages` after a success; a tenth failed with an HTTP 404 naming its URL, a tenth timed out),
a body file per success, and their DuckDB rows recorded through a `Ledger` and synced. Then:

  idle     `scrapeflow status`, no run going on: DuckDB answers (median of --rounds);
  live     the same while this process holds a Ledger with 1,000 steps recorded but not
           spooled (a run in progress), journaled as a run's is: the files its journal names
           are read (`open_markers`);
  unjournaled  the same with a Ledger keeping no journal (an older version's run): every
           status file is `stat`ed and the files changed since its marker's time are read;
  old      the summary as `scrapeflow status` printed it before (scrapeflow's `status_summary`
           over every file), up to --old-max-tasks tasks (834 s at 1,000,000 in issue 42).

With --history N, N earlier runs of every step are added to DuckDB's `step_runs` first (as
refreshes leave them: the same rows, ended N days before), and the bench times what the
history costs: `current_state` read as kept (`engine/history/current.py`) against the window
over every step row it replaced, the table's one-time catch-up from that history, and a sync
of 1,000 new step rows (each ingest updates the table).

Every command runs from a temp folder (Dagster reads `.env` from the working directory) and its
table is checked against the old summary's. Peak RSS is the command's own VmHWM, sampled.
Figures are with the files in the page cache (just written); a cold cache costs more, the old
summary most (it reads every file).
"""

import argparse
import contextlib
import hashlib
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.lib.homes import bench_env, make_home, temp_root
from bench.lib.measured import Measured, run_measured
from bench.lib.repo import PYTHON
from bench.lib.report import machine_info, print_table, write_json
from scrapeflow_dagster.engine.history import Ledger, StepRow, TaskRow, sync_spool
from scrapeflow_dagster.engine.history.counting.status_labels import value_label
from scrapeflow_dagster.engine.state.atomic import create_files_atomic, json_bytes
from scrapeflow_dagster.engine.state.files import load_status, write_status
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.schema import (
    record_error,
    record_start,
    record_success,
    utc_now,
)

TARGET_SECONDS_1M = 5.0
# Tables that must agree: status idle and live against the old summary (where it ran), and the
# journal's way against the `stat` of every file.
CHECKS = ("idle_matches_old", "live_matches_old", "unjournaled_matches_old", "journal_matches_stat")
LIVE_STEPS = 1_000
CHUNK = 50_000  # files written per `create_files_atomic` call
T0 = datetime(2026, 11, 20, 10, 0, 0)  # when the synthetic run ended (naive UTC)
HEADERS = {"content-type": "text/html; charset=utf-8", "server": "nginx"}

OLD_SUMMARY = """
import sys
from scrapeflow_dagster.engine.status import status_summary
summary = status_summary(sys.argv[1])
def short(label):  # the label cut as `scrapeflow status` cut it before
    return label if len(label) <= 48 else label[:45] + "..."
summary.index = summary.index.map(short)
print(summary.groupby(level=0, sort=False).sum().to_string())
"""


def task_files(n: int) -> tuple[dict[str, Any], list[tuple[str, bytes]], list[StepRow]]:
    """Task `n`'s status (as the engine leaves it), its files, and its step rows."""
    key, url = f"task-{n:07d}", f"https://site{n % 100}.test/page/{n}"
    status: dict[str, Any] = {"name": key, "params": {"url": url}}
    ended = T0
    files: list[tuple[str, bytes]] = []
    rows: list[StepRow] = []
    if n % 10 < 2:
        error_class = "HttpStatusError" if n % 10 == 0 else "TimeoutError"
        message = f"HTTP response 404 for {url}" if n % 10 == 0 else "timed out after 30 s"
        record_error(
            status,
            "scrape",
            error_class=error_class,
            message=message,
            kind="permanent" if n % 10 == 0 else "transient",
            ended=ended,
            attempts=1,
        )
        rows.append(
            StepRow(key, "scrape", "ERROR", error_class, "permanent", message, 1, ended_at=ended)
        )
    else:
        body = f"<html><title>{n}</title></html>".encode()
        md5 = hashlib.md5(body).hexdigest()
        output = {"size": len(body), "content": md5, "http_status": 200, "final_url": url}
        record_success(status, "scrape", {**output, "headers": HEADERS}, ended=ended, attempts=1)
        record_success(status, "validation", {"valid": True}, ended=ended, attempts=1)
        page = {"title": str(n), "link_count": 3, "text_bytes": 40}
        record_success(status, "pages", page, ended=ended, attempts=1)
        files.append((f"{key}.scrape", body))
        for name in ("scrape", "validation", "pages"):
            rows.append(StepRow(key, name, "SUCCESS", attempts=1, md5=md5, ended_at=ended))
    files.append((f"{key}.status.json", json_bytes(status)))
    return status, files, rows


def build(layout: DataLayout, tasks: int) -> float:
    """Write `tasks` synthetic tasks and their DuckDB rows; returns the seconds it took."""
    started = time.perf_counter()
    layout.ensure()
    with Ledger(layout.db_path, spool_dir=layout.spool_dir, batch_rows=50_000) as ledger:
        for first in range(0, tasks, CHUNK):
            files: list[tuple[str, bytes]] = []
            for n in range(first, min(first + CHUNK, tasks)):
                status, own, rows = task_files(n)
                files += own
                ledger.record_task(TaskRow(status["name"], status["params"]["url"]))
                for row in rows:
                    ledger.record_step(row)
            create_files_atomic(layout.status_dir, files)
    return time.perf_counter() - started


def start_live_run(layout: DataLayout, tasks: int, *, journal: bool) -> Ledger:
    """A Ledger holding `LIVE_STEPS` steps unspooled, whose status files it changed (failed),
    each named in its journal first as the runner does (with `journal`)."""
    ledger = Ledger(
        layout.db_path, spool_dir=layout.spool_dir, batch_rows=LIVE_STEPS + 1, journal=journal
    )
    step = max(1, tasks // LIVE_STEPS)
    for n in range(0, step * LIVE_STEPS, step)[:LIVE_STEPS]:
        key = f"task-{n % tasks:07d}"
        status = load_status(layout.status_dir, key)
        assert status is not None, key
        started = utc_now()
        record_start(status, "scrape", started)
        ended = utc_now()
        record_error(
            status, "scrape", error_class="ProxyError", message="proxy refused",
            kind="transient", ended=ended, attempts=3,
        )  # fmt: skip
        ledger.announce(key)
        write_status(layout.status_dir, key, status)
        row = StepRow(key, "scrape", "ERROR", "ProxyError", "transient", "proxy refused", 3)
        ledger.record_step(row)
    assert ledger.buffered_rows == LIVE_STEPS
    return ledger


def table_of(text: str) -> dict[tuple[str, str], int]:
    """A printed summary table as {(label, executor): tasks} (zeros left out)."""
    lines = text.strip().splitlines()
    executors = lines[0].split()
    found = {}
    for line in lines[2:]:
        parts = line.rsplit(None, len(executors))
        label, counts = parts[0], parts[1:]
        for executor, count in zip(executors, counts, strict=True):
            if int(count):
                found[(value_label(label), executor)] = int(count)
    return found


# The latest run per (key, executor) over every step row: how `current_state` was found before
# it was kept as a table.
FROM_HISTORY = """
SELECT count(*) FROM (SELECT * FROM step_runs WHERE status <> 'SKIPPED'
QUALIFY row_number() OVER (
    PARTITION BY key, executor ORDER BY ended_at DESC NULLS LAST, seq DESC) = 1)
"""


def add_history(layout: DataLayout, runs: int) -> dict[str, Any]:
    """Give every step `runs` earlier runs (a day apart, before the built one), bring
    `current_state` up to them, and time reading it both ways and a sync of new rows."""
    import duckdb

    conn = duckdb.connect(str(layout.db_path))
    try:
        cols = [str(r[0]) for r in conn.execute("DESCRIBE step_runs").fetchall() if r[0] != "seq"]
        base = conn.execute("SELECT max(seq) FROM step_runs").fetchone()
        assert base is not None
        for day in range(1, runs + 1):
            shifted = [
                f"{c} - INTERVAL {day} DAY" if c in ("started_at", "ended_at") else c for c in cols
            ]
            conn.execute(
                f"INSERT INTO step_runs ({', '.join(cols)}) SELECT {', '.join(shifted)}"
                " FROM step_runs WHERE seq <= ?",
                [base[0]],
            )
        rows = conn.execute("SELECT count(*) FROM step_runs").fetchone()
    finally:
        conn.close()
    started = time.perf_counter()
    sync_spool(layout.db_path, layout.spool_dir)  # catches the table up with the history
    catch_up = time.perf_counter() - started
    conn = duckdb.connect(str(layout.db_path), read_only=True)
    try:
        timed = {}
        for name, sql in (
            ("table", "SELECT count(*) FROM current_state"),
            ("window", FROM_HISTORY),
        ):
            started = time.perf_counter()
            conn.execute(sql).fetchall()
            timed[name] = time.perf_counter() - started
    finally:
        conn.close()
    with Ledger(layout.db_path, spool_dir=layout.spool_dir, batch_rows=LIVE_STEPS) as ledger:
        long_ago = T0 - timedelta(days=runs + 1)  # older than any: no task's state changes
        for n in range(LIVE_STEPS):
            ledger.record_step(StepRow(f"task-{n:07d}", "scrape", "SUCCESS", ended_at=long_ago))
        ledger.flush()
        started = time.perf_counter()
        ledger.sync()
        sync_seconds = time.perf_counter() - started
    result = {
        "runs": runs,
        "step_rows": int(rows[0]) if rows else 0,
        "catch_up_seconds": catch_up,
        "current_state_table_seconds": timed["table"],
        "current_state_window_seconds": timed["window"],
        "sync_1000_steps_seconds": sync_seconds,
    }
    print(
        f"history: {result['step_rows']:,} step rows; current_state {timed['table']:.2f} s"
        f" (the window over them: {timed['window']:.2f} s); the table's catch-up"
        f" {catch_up:.1f} s; a sync of {LIVE_STEPS:,} steps {sync_seconds:.2f} s",
        flush=True,
    )
    return result


def measure_size(
    root: Path, tasks: int, *, rounds: int, old_max: int, history: int = 0
) -> dict[str, Any]:
    layout = DataLayout(root / f"data-{tasks}")
    built = None
    if not layout.db_path.exists():  # else a folder kept by --keep, given again by --reuse
        built = build(layout, tasks)
        print(f"{tasks:,} tasks built in {built:.1f} s", flush=True)
    added = add_history(layout, history) if history else None
    cwd = Path(tempfile.mkdtemp(prefix="cwd-", dir=root))
    home = root / f"home-{tasks}"
    env = bench_env(home if home.is_dir() else make_home(root, home.name), layout.root)
    status_cmd = [PYTHON, "-m", "scrapeflow_dagster.cli", "status"]

    def status(label: str) -> Measured:
        return run_measured(
            status_cmd, env=env, label=label, cwd=cwd, timeout=3600, sample_interval=0.02
        )

    idle = [status("status (idle)") for _ in range(rounds)]
    result: dict[str, Any] = {"tasks": tasks, "build_seconds": built, "history": added}
    result["idle"] = _figures(idle)
    old = None
    if tasks <= old_max:
        old_cmd = [PYTHON, "-c", OLD_SUMMARY, str(layout.status_dir)]
        old = run_measured(
            old_cmd, env=env, label="old summary", cwd=cwd, timeout=7200, sample_interval=0.02
        )
        result["old"] = _figures([old])
        result["ratio_old_over_idle"] = old.seconds / result["idle"]["seconds"]
        result["idle_matches_old"] = table_of(idle[0].stdout_tail) == table_of(old.stdout_tail)
    tables = {}
    # The same steps played twice (the second changes nothing): both ways must count alike.
    for name, journal in (("live", True), ("unjournaled", False)):
        ledger = start_live_run(layout, tasks, journal=journal)
        try:
            live = [status(f"status ({name})") for _ in range(rounds)]
            result[name] = _figures(live)
            tables[name] = table_of(live[0].stdout_tail)
            if tasks <= old_max:
                after = run_measured(old_cmd, env=env, label=f"old summary ({name})", cwd=cwd)
                result[f"{name}_matches_old"] = tables[name] == table_of(after.stdout_tail)
        finally:
            ledger.close(sync=False)
    result["journal_matches_stat"] = tables["live"] == tables["unjournaled"]
    return result


def _figures(runs: list[Measured]) -> dict[str, Any]:
    return {
        "seconds": statistics.median(r.seconds for r in runs),
        "all_seconds": [r.seconds for r in runs],
        "cpu_seconds": statistics.median(r.cpu_seconds for r in runs),
        "peak_rss_mib": max(_peak_rss_mib(r) for r in runs),
        "stderr": runs[0].stderr_tail[-500:],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--million", action="store_true", help="add 1,000,000 tasks")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each status (median)")
    parser.add_argument(
        "--old-max-tasks", type=int, default=100_000, help="time the old summary up to this size"
    )
    parser.add_argument(
        "--history", type=int, default=0, help="earlier runs of every step added to DuckDB"
    )
    parser.add_argument("--tmp-dir", default=None, help="where the data folders go")
    parser.add_argument("--json", metavar="PATH", help="write the figures to PATH as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the data folders")
    parser.add_argument(
        "--reuse", metavar="DIR", help="the folder --keep kept: its data folders are measured again"
    )
    args = parser.parse_args(argv)
    sizes = [*args.sizes, *([1_000_000] if args.million else [])]
    report: dict[str, Any] = {"config": {"sizes": sizes, **machine_info()}, "sizes": []}
    kept = contextlib.nullcontext(Path(args.reuse)) if args.reuse else None
    with kept or temp_root("bench-status-", args.tmp_dir, keep=args.keep) as root:
        for tasks in sizes:
            result = measure_size(
                root, tasks, rounds=args.rounds, old_max=args.old_max_tasks, history=args.history
            )
            report["sizes"].append(result)
            old = result.get("old", {}).get("seconds")
            print(
                f"{tasks:,} tasks: status {result['idle']['seconds']:.2f} s idle, "
                f"{result['live']['seconds']:.2f} s live, "
                f"{result['unjournaled']['seconds']:.2f} s live unjournaled; old "
                + (f"{old:.1f} s" if old is not None else "not run"),
                flush=True,
            )
    rows = [
        [
            r["tasks"],
            r["idle"]["seconds"],
            r["idle"]["peak_rss_mib"],
            r["live"]["seconds"],
            r["live"]["peak_rss_mib"],
            r["unjournaled"]["seconds"],
            r["unjournaled"]["seconds"] / r["live"]["seconds"],
            r.get("old", {}).get("seconds"),
            r.get("old", {}).get("peak_rss_mib"),
            r.get("ratio_old_over_idle"),
            _verdict(*(r.get(k) for k in CHECKS)),
        ]
        for r in report["sizes"]
    ]
    headers = ["tasks", "idle s", "idle MiB", "live s", "live MiB", "unjournaled s", "unj/live"]
    print_table(
        [*headers, "old s", "old MiB", "old/idle", "same table"],
        rows,
        title=(
            "scrapeflow status (median of rounds); live = a run's journaled Ledger holding rows,"
            " unjournaled = one without a journal (every file stat'ed); old = every file read"
        ),
    )
    for r in report["sizes"]:
        if r["tasks"] == 1_000_000:
            slowest = max(r["idle"]["seconds"], r["live"]["seconds"])
            r["target_ok"] = slowest < TARGET_SECONDS_1M
            print(
                f"1M tasks: status in {slowest:.2f} s at worst (target < "
                f"{TARGET_SECONDS_1M:g} s): {'PASS' if r['target_ok'] else 'FAIL'}"
            )
    write_json(args.json, report)
    mismatch = any(r.get(k) is False for r in report["sizes"] for k in CHECKS)
    return 1 if mismatch else 0


def _peak_rss_mib(run: Measured) -> float:
    # VmHWM sampled every 20 ms: os.wait4's figure would be this process's own (a child
    # started by fork and exec inherits its parent's high-water mark).
    return max((p.peak_rss_mib for p in run.processes), default=run.tree_peak_rss_mib)


def _verdict(*checks: bool | None) -> str:
    known = [c for c in checks if c is not None]
    return "-" if not known else ("yes" if all(known) else "NO")


if __name__ == "__main__":
    sys.exit(main())
