"""What one task costs stays within `bench/cost_budget.toml` (issue 61).

Runs the cost ledger (`python -m bench.cost_ledger`: every configuration as a user runs it,
under strace, at two sizes whose difference cancels the fixed cost) at 120 and 240 tasks and
holds each deterministic counter per task to its committed upper bound. A change that adds cost
per task raises the budget in the same commit and says why in its message.
"""

import os
import shutil

import pytest

from bench.cost_ledger import measure
from bench.ledger.report import RAISE_HINT, check, load_budget
from bench.ledger.runs import CONFIGURATIONS

REQUIRE_SERVICES_ENV = "SCRAPEFLOW_REQUIRE_SERVICES"
TASKS = 240  # sizes 120 and 240: both above the 100 events a run's log keeps per asset


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict:
    if shutil.which("strace") is None:
        reason = "strace is not installed (apt-get install strace): the cost ledger needs it"
        if os.environ.get(REQUIRE_SERVICES_ENV) == "1":
            pytest.fail(f"{reason} ({REQUIRE_SERVICES_ENV}=1)")
        pytest.skip(reason)
    parent = tmp_path_factory.mktemp("cost-ledger")
    return measure(tasks=TASKS, jobs=2, clock=False, parent=str(parent))


def test_every_configuration_is_budgeted(measured: dict) -> None:
    budget = load_budget()
    budgeted = {where.split(".", 1)[0] for where in budget}
    assert budgeted == {c.name for c in CONFIGURATIONS}
    for where in budget:
        config, step = where.split(".", 1)
        assert step in measured["configurations"][config]["steps"], where


def test_cost_per_task_within_budget(measured: dict) -> None:
    overruns = check(measured, load_budget())
    assert not overruns, (
        "over budget: "
        + "; ".join(str(o) for o in overruns)
        + (f"\nIf the cost is wanted, {RAISE_HINT} (bench/cost_budget.toml).")
    )
