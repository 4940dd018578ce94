"""Every benchmark in sequence at its default sizes, then one summary table (`make bench`).

    .venv/bin/python -m bench.run_all                    # engine, ledger, add, graphql, dagster,
                                                         # postgres (needs 127.0.0.1:5432), ...
    .venv/bin/python -m bench.run_all --with-settings    # plus bench_dagster --instance-settings
    .venv/bin/python -m bench.run_all --with-scale       # plus peak RSS at 100k tasks
    .venv/bin/python -m bench.run_all --with-chain-scale # plus the chain at 10k and 100k tasks
    .venv/bin/python -m bench.run_all --only main-content   # main content: quality, speed
    .venv/bin/python -m bench.run_all --quick            # small sizes: checks the scripts run
    .venv/bin/python -m bench.run_all --only engine --only add --json-dir out/

Each script runs as its own subprocess (its output is shown as it comes) and writes its figures
as JSON into --json-dir (a temporary folder by default); the summary reads them back. Figures
are ratios against baselines measured in the same run; nothing is asserted, but a script that
fails is reported and the others still run.

Then each benchmark that succeeded gets its row(s) of the current-figures table in
docs/performance.md (between `<!-- bench-table:start -->` and `<!-- bench-table:end -->`)
written again: figure, baseline or peer, ratio, date, machine, command. Rows of benchmarks
that did not run (or failed) stay as they were. `--quick` and `--no-doc` write nothing.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.content.summary import rows_main_content
from bench.lib.cost_rows import rows_cost
from bench.lib.doc_table import DOC, _command, write_table
from bench.lib.headlines import HEADLINES
from bench.lib.repo import PYTHON, REPO
from bench.lib.report import machine_info, print_table
from bench.lib.summary_chain import (
    rows_chain,
    rows_chain_scale,
    rows_discovery,
    rows_extract,
    rows_peer,
    rows_refresh,
    rows_render,
    rows_render_peer,
    rows_retention,
    rows_shards,
    rows_status,
)
from bench.lib.summary_values import (
    Row,
    rows_add,
    rows_dagster,
    rows_engine,
    rows_graphql,
    rows_ledger,
    rows_postgres,
    rows_scale,
)

SHM = "/dev/shm"

BENCHES: list[tuple[str, str, Callable[[dict[str, Any], str], list[Row]], bool]] = [
    # (name, module, summary rows, accepts --json)
    ("engine", "bench.bench_engine", rows_engine, True),
    ("cost", "bench.cost_ledger", rows_cost, True),
    ("ledger", "bench.bench_ledger", rows_ledger, False),
    ("add", "bench.bench_add_tasks", rows_add, True),
    ("graphql", "bench.bench_graphql", rows_graphql, True),
    ("dagster", "bench.bench_dagster", rows_dagster, True),
    ("postgres", "bench.dagster.postgres", rows_postgres, True),
    ("discovery", "bench.engine.bench_discovery", rows_discovery, True),
    ("chain", "bench.dagster.bench_chain", rows_chain, True),
    ("peer", "bench.dagster.bench_peer", rows_peer, True),
    ("extract", "bench.dagster.bench_extract", rows_extract, True),
    ("render", "bench.bench_render", rows_render, True),
    ("render-peer", "bench.bench_render_peer", rows_render_peer, True),
    ("shards", "bench.scaleout.bench_shards", rows_shards, False),
    ("status", "bench.bench_status", rows_status, True),
    ("retention", "bench.bench_retention", rows_retention, True),
    ("scale", "bench.bench_dagster", rows_scale, True),
    ("chain-scale", "bench.bench_chain_scale", rows_chain_scale, True),
    ("refresh", "bench.bench_refresh", rows_refresh, True),
    ("main-content", "bench.bench_main_content", rows_main_content, True),
]
# Run only when asked for (--with-scale or --only scale): ~30 min at 100k even on tmpfs;
# chain-scale (--with-chain-scale or --only chain-scale): the chain at 100k, ~3 GB of disk.
OPT_IN = {"scale", "chain-scale"}
BASE_ARGS = {
    # One timed pass per extractor (~1 min with the peers' venvs built, ~2 min more the first
    # time they are), then the change digests on 20 changing pages over a site week.
    "main-content": ["--rounds", "1"],
    # The goal is per shard count: one, two and four shards side by side, over 2,000
    # pages (~25 min).
    "render-peer": ["--pages", "2000", "--shards", "1,2,4"],
    # Postgres keeps its own disk; the homes and scrapeflow's data go to tmpfs.
    "postgres": ["--tmp-dir", SHM] if Path(SHM).is_dir() else [],
    "scale": ["--only", "scale"] + (["--tmp-dir", SHM] if Path(SHM).is_dir() else []),
}

QUICK_ARGS = {
    "engine": ["--tasks", "1000", "--rounds", "1", "--warmup", "200"],
    "cost": ["--tasks", "240"],
    "ledger": ["--rows", "10000"],
    "add": ["--sizes", "1000"],
    "graphql": ["--partitions", "5000", "--materialized", "100", "--warm", "2"],
    "dagster": ["--tasks", "200", "--backfill-tasks", "200", "--settings-tasks", "200"],
    "scale": ["--scale-tasks", "1000"],
    "postgres": ["--tasks", "200"],
    "discovery": ["--pages", "500"],
    "chain": ["--tasks", "300", "--rounds", "1"],
    "shards": ["--tasks", "400"],
    "peer": ["--tasks", "1000", "--rounds", "1"],
    "extract": ["--products", "1000", "--rounds", "1"],
    "render": ["--pages", "200", "--auto-pages", "200"],
    "render-peer": ["--pages", "200", "--shards", "1,2"],
    "status": ["--sizes", "2000", "--rounds", "1"],
    "retention": ["--tasks", "60", "--refreshes", "2"],
    "chain-scale": ["--sizes", "2000", "--status-rounds", "1"],
    "refresh": ["--pages", "50", "--days", "2"],
    "main-content": [
        "--only",
        "scrapeflow",
        "whole_page",
        "--digest-pages",
        "4",
        "--digest-days",
        "1",
    ],
}


def run_one(module: str, args: list[str]) -> tuple[int, str, float]:
    """Run `python -m module args`, echoing its output; returns (exit code, output, seconds)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [PYTHON, "-m", module, *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        lines.append(line)
    code = proc.wait()
    return code, "".join(lines), time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only", action="append", choices=[b[0] for b in BENCHES], help="repeatable"
    )
    parser.add_argument("--with-settings", action="store_true", help="dagster settings variants")
    parser.add_argument(
        "--with-scale", action="store_true", help="also peak RSS at 100k tasks (~30 min)"
    )
    parser.add_argument(
        "--with-chain-scale",
        action="store_true",
        help="also the whole chain in one run at 10k and 100k tasks (issue 42)",
    )
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--json-dir", default=None, help="keep each script's JSON here")
    parser.add_argument(
        "--no-doc", action="store_true", help="leave docs/performance.md's table as it is"
    )
    parser.add_argument("--doc", type=Path, default=DOC, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    json_dir = Path(args.json_dir or tempfile.mkdtemp(prefix="bench-all-"))
    json_dir.mkdir(parents=True, exist_ok=True)
    opted_in = {"scale": args.with_scale, "chain-scale": args.with_chain_scale}
    selected = [
        b
        for b in BENCHES
        if (b[0] in args.only if args.only else b[0] not in OPT_IN or opted_in[b[0]])
    ]
    info = machine_info()
    print(f"bench.run_all: {', '.join(b[0] for b in selected)} (JSON in {json_dir})")
    print(f"python {info['python']}, {info['cpus']} CPUs, load average {info['loadavg']}")
    started = time.perf_counter()
    rows: list[Row] = []
    timings: list[Row] = []
    fresh: dict[str, list[Row]] = {}
    date = time.strftime("%Y-%m-%d")
    machine = f"{info['cpus']} cores, Python {info['python']}"
    for name, module, summarise, has_json in selected:
        extra = BASE_ARGS.get(name, []) + (list(QUICK_ARGS[name]) if args.quick else [])
        if name == "dagster" and args.with_settings:
            extra.append("--instance-settings")
        path = json_dir / f"{name}.json"
        if has_json:
            extra += ["--json", str(path)]
        print(f"\n{'=' * 100}\n== {module} {' '.join(extra)}\n{'=' * 100}", flush=True)
        code, out, seconds = run_one(module, extra)
        timings.append([name, seconds, code])
        data: dict[str, Any] = {}
        if has_json and path.exists():
            data = json.loads(path.read_text())
        try:
            rows += summarise(data, out)
        except (KeyError, TypeError, ZeroDivisionError) as exc:
            rows.append([name, f"summary unavailable ({exc!r})", None, "", "-"])
        if code != 0:
            rows.append([name, f"FAILED with exit code {code}", None, "", "FAIL"])
        else:
            try:
                heads = HEADLINES[name](data, out)
            except (KeyError, TypeError, ZeroDivisionError, ValueError):
                heads = []
            if heads:
                fresh[name] = [[*h, date, machine, _command(module, extra)] for h in heads]
    total = time.perf_counter() - started
    print(f"\n{'=' * 100}")
    print_table(["bench", "figure", "value", "target", "verdict"], rows, title="summary")
    print_table(["bench", "seconds", "exit code"], timings, title="time per script")
    print(f"\nall benchmarks took {total / 60:.1f} min; JSON figures in {json_dir}")
    if fresh and not (args.quick or args.no_doc):
        written = write_table(args.doc, fresh)
        print(f"{args.doc}: rows of {', '.join(written)} written")
    return 0 if all(t[2] == 0 for t in timings) else 1


if __name__ == "__main__":
    sys.exit(main())
