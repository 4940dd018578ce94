"""The refresh schedule: re-fetch tasks whose fetch is older than a maximum age."""

from collections.abc import Iterable, Sequence
from datetime import datetime

import dagster as dg

from scrapeflow_dagster.defs.automation import ExecutorChain, cron_from_env, range_run_requests
from scrapeflow_dagster.defs.partitions import TASKS_PARTITIONS_NAME
from scrapeflow_dagster.defs.resources import AutomationSettingsResource, StatusStoreResource
from scrapeflow_dagster.engine.retry.ranges import plan_ranges
from scrapeflow_dagster.engine.state.files import iter_statuses
from scrapeflow_dagster.engine.state.schema import StatusData, is_fresh, is_success, utc_now

# Deployment setting, read when the definitions load (Dagster needs the cron then).
REFRESH_CRON_ENV = "SCRAPEFLOW_REFRESH_CRON"
REFRESH_CRON_DEFAULT = "0 3 * * *"


def stale_keys(
    statuses: Iterable[tuple[str, StatusData]],
    name: str,
    now: datetime,
    max_age_seconds: float,
) -> tuple[set[str], set[str]]:
    """`(stale, succeeded)`: keys whose last success of step `name` is older than
    `max_age_seconds`, and every key where that step succeeded."""
    stale: set[str] = set()
    succeeded: set[str] = set()
    for key, status in statuses:
        if not is_success(status, name):
            continue
        succeeded.add(key)
        if not is_fresh(status, name, max_age_seconds=max_age_seconds, now=now):
            stale.add(key)
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
        target=[root],
        description=(
            f"Cron {cron!r} (${REFRESH_CRON_ENV}, default daily at 03:00): re-run {root_name} "
            "for tasks older than automation_settings.refresh_max_age_hours."
        ),
    )
    def refresh_schedule(
        context: dg.ScheduleEvaluationContext,
        status_store: StatusStoreResource,
        automation_settings: AutomationSettingsResource,
    ) -> list[dg.RunRequest] | dg.SkipReason:
        """Request runs over ranges of stale tasks with `refresh_older_than_seconds` set, so
        tasks in a range that are still fresh are skipped by the run itself."""
        max_age_seconds = automation_settings.refresh_max_age_seconds()
        statuses = iter_statuses(status_store.layout().status_dir)
        stale, succeeded = stale_keys(statuses, root_name, utc_now(), max_age_seconds)
        if not stale:
            return dg.SkipReason("no task is older than the maximum age")
        ordered = context.instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME)
        ranges = plan_ranges(ordered, stale, passable=succeeded)
        config = chain.step_config(refresh_older_than_seconds=max_age_seconds)
        execution = context.scheduled_execution_time
        stamp = execution.isoformat() if execution else ""
        return range_run_requests(
            chain, root, ranges, ordered, reason="refresh", fingerprint=stamp, run_config=config
        )

    return refresh_schedule
