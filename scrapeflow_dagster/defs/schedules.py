"""The refresh schedule: re-fetch tasks whose fetch is older than a maximum age."""

from collections.abc import Iterable, Sequence
from datetime import datetime

import dagster as dg

from scrapeflow_dagster.defs.automation import ExecutorChain, cron_from_env, range_run_requests
from scrapeflow_dagster.engine.crawl.frontier.lastmods import sitemap_hints
from scrapeflow_dagster.engine.retry.ranges import plan_ranges
from scrapeflow_dagster.engine.revisit.plan import (
    AGED,
    DueTask,
    due_tasks,
    host_of,
    plan_refresh,
)
from scrapeflow_dagster.engine.state.files import iter_statuses
from scrapeflow_dagster.engine.state.schema import (
    StatusData,
    is_fresh,
    is_success,
    last_run,
    utc_now,
)
from scrapeflow_dagster.lib.partitions import TASKS_PARTITIONS_NAME
from scrapeflow_dagster.lib.resources import (
    REFRESH_LEARNED,
    AutomationSettingsResource,
    StatusStoreResource,
)

# Deployment setting, read when the definitions load (Dagster needs the cron then).
REFRESH_CRON_ENV = "SCRAPEFLOW_REFRESH_CRON"
REFRESH_CRON_DEFAULT = "0 3 * * *"


def stale_tasks(
    statuses: Iterable[tuple[str, StatusData]],
    name: str,
    now: datetime,
    max_age_seconds: float,
) -> tuple[list[DueTask], set[str]]:
    """`(stale, succeeded)` in one pass: the tasks whose last success of step `name` is older
    than `max_age_seconds` (as due tasks, the oldest worth the most, for a budget), and every
    key where that step succeeded."""
    stale: list[DueTask] = []
    succeeded: set[str] = set()
    for key, status in statuses:
        if not is_success(status, name):
            continue
        succeeded.add(key)
        if not is_fresh(status, name, max_age_seconds=max_age_seconds, now=now):
            fetched = last_run(status, name) or now
            host = host_of(status["params"].get("url"))
            age = (now - fetched).total_seconds()
            stale.append(DueTask(key, host, fetched, fetched, 0.0, age, AGED))
    return stale, succeeded


def build_refresh_schedule(
    executor_assets: Sequence[dg.AssetsDefinition], *, in_process_small_runs: bool = False
) -> dg.ScheduleDefinition:
    """The refresh schedule of the chain's fetching asset (the first of `executor_assets`).
    `in_process_small_runs`: see `ExecutorChain`."""
    chain = ExecutorChain.of(executor_assets, in_process_small_runs=in_process_small_runs)
    root = chain.root
    root_name = root.to_user_string()

    cron = cron_from_env(REFRESH_CRON_ENV, REFRESH_CRON_DEFAULT)

    @dg.schedule(
        name="refresh_schedule",
        cron_schedule=cron,
        target=chain.keys,
        description=(
            f"Cron {cron!r} (${REFRESH_CRON_ENV}, default daily at 03:00): re-run {root_name} "
            "for tasks older than automation_settings.refresh_max_age_hours, or, with "
            "refresh_policy 'learned', those whose learned revisit interval has passed, "
            "within refresh_budget and refresh_host_budget."
        ),
    )
    def refresh_schedule(
        context: dg.ScheduleEvaluationContext,
        status_store: StatusStoreResource,
        automation_settings: AutomationSettingsResource,
    ) -> list[dg.RunRequest] | dg.SkipReason:
        """Request runs over ranges of stale tasks with `refresh_older_than_seconds` set, so
        tasks in a range that are still fresh are skipped by the run itself; with the learned
        policy, over the due tasks the budgets allow (`engine.revisit.plan`)."""
        max_age_seconds = automation_settings.refresh_max_age_seconds()
        policy, budget, host_budget = automation_settings.refresh_plan()
        # One pass over the status files, keeping only what the plan needs of each (a million
        # parsed status files at once would not fit).
        statuses = iter_statuses(status_store.layout().status_dir)
        succeeded: set[str] = set()
        if policy == REFRESH_LEARNED:
            dated, frequencies = sitemap_hints(status_store.layout())
            found = due_tasks(
                statuses,
                root_name,
                utc_now(),
                unlearned_seconds=max_age_seconds,
                lastmods=dated,
                changefreqs=frequencies,
                any_time=budget is not None,  # a budget goes where it buys the most
            )
            chosen = plan_refresh(found, budget=budget, host_budget=host_budget)
            stale = {task.key for task in chosen}
            # Chosen by their own intervals: none is skipped as fresh by the run.
            max_age_seconds = 0.0
            if not stale:
                return dg.SkipReason("no task is due (learned revisit intervals)")
        else:
            aged, succeeded = stale_tasks(statuses, root_name, utc_now(), max_age_seconds)
            stale = {t.key for t in plan_refresh(aged, budget=budget, host_budget=host_budget)}
        if not stale:
            return dg.SkipReason("no task is older than the maximum age")
        ordered = context.instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME)
        # Under a budget or a learned plan, a range spans only the chosen tasks: any other in it
        # would be fetched too (the run's age limit would not stop it).
        exact = policy == REFRESH_LEARNED or budget is not None or host_budget is not None
        ranges = plan_ranges(ordered, stale, passable=set() if exact else succeeded)
        config = chain.step_config(refresh_older_than_seconds=max_age_seconds)
        execution = context.scheduled_execution_time
        stamp = execution.isoformat() if execution else ""
        # A learned plan runs the whole chain: `pages` observes each fetch, so what the plan
        # learns from is there for the next tick (the age policy leaves the steps after the
        # fetch to the retry sensor, as before).
        target = chain.keys if policy == REFRESH_LEARNED else root
        return range_run_requests(
            chain, target, ranges, ordered, reason="refresh", fingerprint=stamp, run_config=config
        )

    return refresh_schedule
