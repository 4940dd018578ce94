"""What each policy fetches in a round, at most its budget: the fixed age's oldest pages, the
engine planner's picks on learned estimates, and the same greedy rule on the true rates."""

from bench.refresh.model import HOUR, PolicyRun, at
from scrapeflow_dagster.engine.revisit.plan import (
    EARLY,
    DueTask,
    freshness_gain,
    learned_due,
    plan_refresh,
)
from scrapeflow_dagster.site.content.changing import rate_per_hour


def fixed_pick(run: PolicyRun, now: float, age: float, budget: int) -> list[int]:
    """The pages last fetched at least `age` seconds ago, oldest first, at most `budget`."""
    old = [n for n, s in run.stored.items() if now - s.fetched_at >= age - 1e-6]
    old.sort(key=lambda n: (run.stored[n].fetched_at, n))
    return old[:budget]


def learned_pick(
    run: PolicyRun, now: float, budget: int, host: str, horizon: float, fill: int = 0
) -> list[int]:
    """What the engine's planner picks within `budget`: without `fill`, only due pages
    (`plan.learned_due`, ranked by `plan.plan_refresh`); with it, every observed page competes
    (`any_time`, as `scrapeflow refresh --due --budget` plans), gains counted over `horizon`
    seconds, and at most `fill` requests are spent (the fixed schedule's to date)."""
    clock = at(now)
    candidates = [
        task
        for n, s in run.stored.items()
        if (
            task := learned_due(
                f"{n:06d}",
                host,
                s.revisit,
                clock,
                horizon_seconds=horizon,
                any_time=fill > 0,
            )
        )
        is not None
    ]
    cap = budget if fill <= 0 else min(budget, fill)
    return [int(task.key) for task in plan_refresh(candidates, budget=cap)]


def oracle_pick(
    run: PolicyRun, now: float, budget: int, host: str, horizon: float, fill: int
) -> list[int]:
    """The greedy rule with the pages' true rates: every page a candidate (`EARLY`, so one
    that never changes, buying nothing, is never picked), its gain `plan.freshness_gain` at
    `rate_per_hour(n) / 3600` over `horizon` seconds, picked by `plan.plan_refresh`, at most
    `budget` and at most `fill` requests (the fixed schedule's to date)."""
    candidates = [
        DueTask(
            key=f"{n:06d}",
            host=host,
            due_at=at(s.fetched_at + horizon),  # among equal gains, the longest unfetched first
            fetched_at=at(s.fetched_at),
            rate_per_second=(rate := rate_per_hour(n) / HOUR),
            gain_seconds=freshness_gain(rate, now - s.fetched_at, horizon),
            reason=EARLY,
        )
        for n, s in run.stored.items()
    ]
    cap = max(0, min(budget, fill))
    return [int(task.key) for task in plan_refresh(candidates, budget=cap)]
