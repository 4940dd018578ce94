"""How long `scrapeflow tasks add` takes for 10,000 and 100,000 tasks, and its peak RSS.

    .venv/bin/python -m bench.bench_add_tasks                   # 10k and 100k
    .venv/bin/python -m bench.bench_add_tasks --sizes 10000 --json add.json

Each size runs in a fresh DAGSTER_HOME (SQLite) and SCRAPEFLOW_DATA_DIR:

  ours     `python -m scrapeflow_dagster.cli tasks add tasks.txt` (N URLs): validates every
           line, writes N status files, spools N DuckDB rows (synced at the end) and adds the
           N partitions;
  again    the same command on the same file: every task already known (nothing written);
  floor    `python -m bench.floor_defs add keys.txt`: the same N keys added as partitions by
           Dagster alone (`instance.add_dynamic_partitions` in chunks of 10,000), a fresh home.

Target printed: 100k tasks added in < 30 s. Peak RSS is the process's own (os.wait4).
"""

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from bench.lib.homes import bench_env, make_home, temp_root
from bench.lib.measured import run_measured
from bench.lib.repo import PYTHON
from bench.lib.report import machine_info, print_table, write_json

TARGET_SECONDS_100K = 30.0
URL_BASE = "http://127.0.0.1:8765"  # never fetched: adding tasks does not touch the network


def write_files(root: Path, n: int) -> tuple[Path, Path]:
    from scrapeflow_dagster.engine.tasks.intake import TaskSpec, read_task_file

    tasks_file = root / f"tasks-{n}.txt"
    with tasks_file.open("w") as f:
        for i in range(n):
            f.write(f"{URL_BASE}/page/{i}\n")
    keys = [item.key for item in read_task_file(tasks_file) if isinstance(item, TaskSpec)]
    keys_file = root / f"keys-{n}.txt"
    keys_file.write_text("\n".join(keys) + "\n")
    return tasks_file, keys_file


def measure_size(root: Path, n: int, tag: str) -> dict[str, Any]:
    tasks_file, keys_file = write_files(root, n)
    home = make_home(root, f"home-{tag}")
    data = root / f"data-{tag}"
    env = bench_env(home, data)
    add_cmd = [PYTHON, "-m", "scrapeflow_dagster.cli", "tasks", "add", str(tasks_file)]
    ours = run_measured(add_cmd, env=env, label="scrapeflow tasks add", timeout=900)
    status_files = sum(1 for _ in (data / "status").iterdir()) if (data / "status").is_dir() else 0
    again = run_measured(add_cmd, env=env, label="scrapeflow tasks add (again)", timeout=900)
    floor_home = make_home(root, f"floor-{tag}")
    floor = run_measured(
        [PYTHON, "-m", "bench.floor_defs", "add", str(keys_file)],
        env=bench_env(floor_home),
        label="floor add",
        timeout=900,
    )
    return {
        "tasks": n,
        "status_files": status_files,
        "ours_output": ours.stdout_tail.strip(),
        "ours": ours.to_dict(),
        "again": again.to_dict(),
        "floor": floor.to_dict(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--tmp-dir", default=None, help="where temporary homes go")
    parser.add_argument("--json", metavar="PATH", help="write the figures to PATH as JSON")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {"config": {"sizes": args.sizes, **machine_info()}, "sizes": []}
    started = time.perf_counter()
    with temp_root("bench-add-", args.tmp_dir) as root:
        for n in args.sizes:
            result = measure_size(root, n, str(n))
            report["sizes"].append(result)
            print(
                f"{n:,} tasks: add {result['ours']['seconds']:.1f} s,"
                f" again {result['again']['seconds']:.1f} s,"
                f" floor {result['floor']['seconds']:.1f} s",
                flush=True,
            )
    rows = []
    for r in report["sizes"]:
        ours, again, floor = r["ours"], r["again"], r["floor"]
        rows.append(
            [
                r["tasks"],
                ours["seconds"],
                r["tasks"] / ours["seconds"],
                ours["cpu_seconds"],
                ours["tree_peak_rss_mib"],
                again["seconds"],
                floor["seconds"],
                floor["tree_peak_rss_mib"],
                ours["seconds"] / floor["seconds"],
                ours["other_busy_cores"],
            ]
        )
    print_table(
        [
            "tasks",
            "add s",
            "tasks/s",
            "CPU s",
            "peak MiB",
            "again s",
            "floor s",
            "floor MiB",
            "add/floor",
            "others",
        ],
        rows,
        title="scrapeflow tasks add (fresh homes); floor = the keys added as partitions alone",
    )
    for r in report["sizes"]:
        if r["tasks"] == 100_000:
            ok = r["ours"]["seconds"] < TARGET_SECONDS_100K
            r["target_ok"] = ok
            print(
                f"100k tasks added in {r['ours']['seconds']:.1f} s (target <"
                f" {TARGET_SECONDS_100K:.0f} s): {'PASS' if ok else 'FAIL'}"
            )
    report["total_seconds"] = time.perf_counter() - started
    write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
