"""Per-task figures from two sizes, the tables `make bench` prints, and the budget check.

A counter's per-task figure is `(c(N2) - c(N1)) / (N2 - N1)`: both runs pay the same fixed
cost (interpreter and imports, the home's schema, the run's start and end events, robots.txt,
the shard template), so the difference of two sizes keeps only what grows with the tasks.
"""

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BUDGET_PATH = Path(__file__).resolve().parent.parent / "cost_budget.toml"
RAISE_HINT = "raise the budget in the same commit and say why"
# Per process, not per task: compared with the budget as measured at the larger size.
PER_PROCESS = ("modules_at_first_request", "python_processes")
# The rows of a table, in order; a row with a dot is a breakdown of the one before.
MAIN = (
    "files_created",
    "renames",
    "fsyncs",
    "locks",
    "bytes_written",
    "writes",
    "sql_statements.home",
    "duckdb_statements.duckdb",
    "dagster_events",
    "dagster_index_rows",
)


def per_task(
    small: dict[str, float], large: dict[str, float], n1: int, n2: int
) -> dict[str, float]:
    """Each counter's growth per task between the runs of `n1` and `n2` tasks."""
    keys = set(small) | set(large)
    return {k: (large.get(k, 0.0) - small.get(k, 0.0)) / (n2 - n1) for k in sorted(keys)}


def _rows(figures: dict[str, float]) -> list[str]:
    rows: list[str] = []
    for main in MAIN:
        rows.append(main)
        subs = [
            k for k in figures if k.startswith(main + ".") and k.count(".") == main.count(".") + 1
        ]
        rows += sorted(subs, key=lambda k: -abs(figures[k]))
    return rows


def _number(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}" if abs(value) < 10 else f"{value:.1f}"


def table(title: str, step: dict[str, Any]) -> str:
    """One configuration's step: counter | per task | per 1M tasks, then its per-process
    figures and clocks."""
    figures: dict[str, float] = step["per_task"]
    width = 44
    lines = [f"== {title}", f"{'counter':<{width}} {'per task':>12} {'per 1M tasks':>16}"]
    for name in _rows(figures):
        value = figures.get(name, 0.0)
        if name not in MAIN and abs(value) < 0.005:
            continue
        label = ("  " + name.split(".", 1)[1]) if "." in name and name not in MAIN else name
        lines.append(f"{label:<{width}} {_number(value):>12} {_number(value * 1e6):>16}")
    for name, value in step["per_process"].items():
        lines.append(f"{name + ' (per process)':<{width}} {_number(value):>12}")
    for name, value in step["clock"].items():
        shown = "-" if value is None else f"{value:.2f}"
        lines.append(f"{name + ' (clock, s)':<{width}} {shown:>12}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Overrun:
    """A counter above its budget."""

    where: str
    counter: str
    measured: float
    budget: float

    def __str__(self) -> str:
        return (
            f"{self.where}: {self.counter} = {self.measured:.4g} per task, budget {self.budget:g}"
            f" (bench/cost_budget.toml): a change that adds cost per task must {RAISE_HINT}"
        )


def load_budget(path: Path = BUDGET_PATH) -> dict[str, dict[str, float]]:
    """The budget: `{"configuration.step": {counter: upper bound}}`."""
    with path.open("rb") as raw:
        data = tomllib.load(raw)
    return {
        f"{config}.{step}": {k: float(v) for k, v in bounds.items()}
        for config, steps in data.items()
        for step, bounds in steps.items()
    }


def check(measured: dict[str, Any], budget: dict[str, dict[str, float]]) -> list[Overrun]:
    """Every budgeted counter over its bound, in the configurations `measured` holds (a step
    they hold without its figures counts as infinite)."""
    overruns: list[Overrun] = []
    for where, bounds in budget.items():
        config, step = where.split(".", 1)
        if config not in measured["configurations"]:
            continue
        figures = measured["configurations"][config]["steps"].get(step)
        for counter, bound in bounds.items():
            if figures is None:
                overruns.append(Overrun(where, counter, float("inf"), bound))
                continue
            source = figures["per_process"] if counter in PER_PROCESS else figures["per_task"]
            value = source.get(counter, 0.0)
            if value > bound:
                overruns.append(Overrun(where, counter, value, bound))
    return overruns
