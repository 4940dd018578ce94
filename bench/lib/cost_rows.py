"""The cost ledger's rows (`bench.cost_ledger`): per task, per configuration, deterministic
counters beside the wall-clock figures of the other benchmarks."""

from typing import Any

Row = list[Any]
Headline = list[str]
# The counters shown (the rest are in the ledger's own output): what a million tasks multiply.
SHOWN = (
    ("files_created", "files created"),
    ("renames", "renames"),
    ("bytes_written", "bytes written"),
    ("bytes_written.home", "bytes to the Dagster home"),
    ("sql_statements.home", "SQL statements on the home"),
)


def _per_task(data: dict[str, Any], configuration: str) -> dict[str, Any]:
    steps = (data.get("configurations") or {}).get(configuration, {}).get("steps") or {}
    return dict((steps.get("materialize") or {}).get("per_task") or {})


def rows_cost(data: dict[str, Any], _out: str) -> list[Row]:
    """One row per configuration and shown counter: per task, and per million tasks."""
    rows: list[Row] = []
    for configuration in data.get("configurations") or {}:
        per_task = _per_task(data, configuration)
        for key, label in SHOWN:
            value = per_task.get(key)
            if value is not None:
                rows.append([f"cost ({configuration})", f"{label} per task", value, "", "-"])
    return rows


def head_cost(data: dict[str, Any], _out: str) -> list[Headline]:
    """The docs table's rows: per task of the chain and of `scrape` alone, against the budget."""
    heads: list[Headline] = []
    for configuration in ("chain", "scrape"):
        per_task = _per_task(data, configuration)
        if not per_task:
            continue
        figure = ", ".join(
            f"{label} {per_task[key]:,.2f}" for key, label in SHOWN if key in per_task
        )
        heads.append(
            [f"cost ({configuration})", f"per task: {figure}", "bench/cost_budget.toml", "-"]
        )
    return heads
