"""What one task costs, per step and per setting, from counters that do not depend on the clock.

    .venv/bin/python -m bench.cost_ledger                # 200 and 400 tasks, every configuration
    .venv/bin/python -m bench.cost_ledger --tasks 1000   # 500 and 1000 tasks
    .venv/bin/python -m bench.cost_ledger --only chain --json out.json
    .venv/bin/python -m bench.cost_ledger --check        # exit 1 when a counter is over budget

Each configuration (`bench/ledger/runs.py`: the chain; `scrape` alone; revisit tracking off;
extraction; page text; all with render off, the default) runs as a user runs it, in a fresh
Dagster home and data folder, `scrapeflow tasks add` then `dagster asset materialize`, at two
sizes N1 = N/2 and N2 = N (N1 above 100: a larger run's log keeps the first 100 asset
events of each asset and kind, so a smaller one pays what a large one does not), each measured
command under
`strace -f -y` (`bench/ledger/trace.py`: files created, renames, fsyncs, locks, bytes written,
by where they landed) with a `sitecustomize` in every Python process
(`bench/ledger/sitecustomize.py`: SQL statements on SQLite and DuckDB, modules loaded and the
wall clock at the first request), and the home's event log rows counted after the run. Per task
is the difference of the two sizes over N2 - N1 (`bench/ledger/report.py`): fixed cost cancels.

`scrapeflow_dagster_tests/test_cost_budget.py` holds the figures to `bench/cost_budget.toml`.
Clocks (seconds, time to the first request) are printed beside, never budgeted.
"""

import argparse
import json
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.ledger.floor_clock import floor_to_body
from bench.ledger.report import PER_PROCESS, check, load_budget, per_task, table
from bench.ledger.runs import (
    CONFIGURATIONS,
    Configuration,
    StepResult,
    clock_run,
    run_configuration,
)
from bench.ledger.trace import strace_path
from scrapeflow_dagster.site.server import SiteThread

DEFAULT_TASKS = 400
# A run over more than 100 tasks keeps only the first 100 asset events of each asset and kind
# in its own log (docs/configuration.md): both sizes above it measure what a large run pays.
RUN_LOG_KEPT_EVENTS = 100


def sizes_for(tasks: int) -> tuple[int, int]:
    """The two sizes measured for `--tasks N`: N/2 and N.

    Raises:
        ValueError: when N/2 is not above the 100 events a run's log keeps per asset.
    """
    if tasks // 2 <= RUN_LOG_KEPT_EVENTS:
        raise ValueError(f"--tasks {tasks}: at least {2 * RUN_LOG_KEPT_EVENTS + 2} (N/2 > 100)")
    return tasks // 2, tasks


def _step_figures(small: StepResult, large: StepResult, n1: int, n2: int) -> dict[str, Any]:
    figures = per_task(small.counters, large.counters, n1, n2)
    return {
        "per_task": {k: v for k, v in figures.items() if k not in PER_PROCESS},
        "per_process": {k: large.counters.get(k, 0.0) for k in PER_PROCESS},
        "clock": {
            f"seconds at {n2} tasks (traced)": large.seconds,
            "seconds to first request (traced)": large.seconds_to_first_request,
        },
        "totals": {str(n1): small.counters, str(n2): large.counters},
    }


def measure(
    *,
    tasks: int = DEFAULT_TASKS,
    only: list[str] | None = None,
    jobs: int = 2,
    clock: bool = True,
    parent: str | None = None,
) -> dict[str, Any]:
    """Run the configurations (`only`: those named) at two sizes; `jobs` runs at once.

    Returns `{"sizes", "configurations": {name: {"about", "steps": {step: figures}}}, "clock"}`.

    Raises:
        RuntimeError: when strace is missing or a measured command fails.
    """
    if strace_path() is None:
        raise RuntimeError("strace is not installed (apt-get install strace)")
    n1, n2 = sizes_for(tasks)
    chosen = [c for c in CONFIGURATIONS if not only or c.name in only]
    if only and len(chosen) != len(set(only)):
        known = ", ".join(c.name for c in CONFIGURATIONS)
        raise ValueError(f"unknown configuration in {only}; known: {known}")
    runs = [(config, n) for config in chosen for n in (n1, n2)]
    with SiteThread(pages=max(n2, 10)) as site:
        url = site.base_url

        def run(item: tuple[Configuration, int]) -> dict[str, StepResult]:
            return run_configuration(item[0], item[1], url, parent=parent)

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            results = list(pool.map(run, runs))
        clocked = clock_run(n2, url, parent=parent) if clock else None
        # One partition: Dagster's start-up alone (its stock home commits each planned event
        # before the run starts, ~10 ms each, which would be counted too at N partitions).
        floor = floor_to_body(1, parent=parent) if clock else None
    out: dict[str, Any] = {"sizes": [n1, n2], "configurations": {}, "clock": {}}
    for index, config in enumerate(chosen):
        small, large = results[2 * index], results[2 * index + 1]
        out["configurations"][config.name] = {
            "about": config.about,
            "steps": {step: _step_figures(small[step], large[step], n1, n2) for step in large},
        }
    if clocked is not None:
        out["clock"] = {
            "tasks": n2,
            "materialize seconds (chain, untraced)": clocked.seconds,
            "seconds to first request (chain, untraced)": clocked.seconds_to_first_request,
            "modules at first request": clocked.counters.get("modules_at_first_request"),
        }
    if floor is not None:
        out["clock"]["Dagster's floor: seconds to a trivial asset's body"] = floor[
            "seconds_to_body"
        ]
        out["clock"]["Dagster's floor: modules at its body"] = floor["modules_at_body"]
    return out


def render(measured: dict[str, Any]) -> str:
    """Every configuration's tables, as `make bench` prints them."""
    n1, n2 = measured["sizes"]
    parts = [f"Cost per task: the difference of runs of {n1} and {n2} tasks, over {n2 - n1}."]
    for name, config in measured["configurations"].items():
        for step, figures in config["steps"].items():
            parts.append(table(f"{name}.{step}: {config['about']}", figures))
    if measured["clock"]:
        parts.append("== clock (untraced chain)")
        parts += [f"{k:<44} {v}" for k, v in measured["clock"].items()]
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--tasks", type=int, default=DEFAULT_TASKS, help="the larger size N")
    parser.add_argument("--only", action="append", help="a configuration (repeatable)")
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (default 2)")
    parser.add_argument("--json", nargs="?", const="-", metavar="FILE", help="JSON to FILE or -")
    parser.add_argument("--json-dir", help="also write cost_ledger.json here (bench.run_all)")
    parser.add_argument("--no-clock", action="store_true", help="skip the untraced clock run")
    parser.add_argument("--check", action="store_true", help="exit 1 when over budget")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cost-ledger-runs-") as parent:
        measured = measure(
            tasks=args.tasks, only=args.only, jobs=args.jobs, clock=not args.no_clock, parent=parent
        )
    if args.json == "-":
        json.dump(measured, sys.stdout, indent=1)
    else:
        print(render(measured))
        if args.json:
            Path(args.json).write_text(json.dumps(measured, indent=1))
    if args.json_dir:
        Path(args.json_dir, "cost_ledger.json").write_text(json.dumps(measured, indent=1))
    overruns = check(measured, load_budget())
    for overrun in overruns:
        print(f"OVER BUDGET {overrun}", file=sys.stderr)
    return 1 if overruns and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
