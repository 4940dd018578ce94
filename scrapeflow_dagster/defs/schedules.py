"""Schedules: refresh tasks whose `scrape` is older than a maximum age."""

import os
from collections.abc import Iterable
from datetime import datetime

import dagster as dg

from scrapeflow_dagster.defs.assets import SCRAPE_KEY
from scrapeflow_dagster.defs.partitions import TASKS_PARTITIONS_NAME
from scrapeflow_dagster.defs.resources import AutomationSettingsResource, StatusStoreResource
from scrapeflow_dagster.defs.run_requests import range_run_request
from scrapeflow_dagster.engine.retry.ranges import plan_ranges
from scrapeflow_dagster.engine.state.files import iter_statuses
from scrapeflow_dagster.engine.state.schema import StatusData, is_fresh, is_success, utc_now

SCRAPE = SCRAPE_KEY.to_user_string()
# Deployment setting, read when the definitions load (Dagster needs the cron then).
REFRESH_CRON_ENV = "SCRAPEFLOW_REFRESH_CRON"


def stale_keys(
    statuses: Iterable[tuple[str, StatusData]], now: datetime, max_age_seconds: float
) -> tuple[set[str], set[str]]:
    """`(stale, succeeded)`: keys whose last successful scrape is older than `max_age_seconds`,
    and every key whose scrape succeeded."""
    stale: set[str] = set()
    succeeded: set[str] = set()
    for key, status in statuses:
        if not is_success(status, SCRAPE):
            continue
        succeeded.add(key)
        if not is_fresh(status, SCRAPE, max_age_seconds=max_age_seconds, now=now):
            stale.add(key)
    return stale, succeeded


@dg.schedule(
    name="refresh_schedule",
    cron_schedule=os.environ.get(REFRESH_CRON_ENV) or "0 3 * * *",
    target=[SCRAPE_KEY],
    description=(
        "Daily at 03:00 ($SCRAPEFLOW_REFRESH_CRON): re-scrape tasks older than "
        "$SCRAPEFLOW_REFRESH_MAX_AGE_HOURS (7 days)."
    ),
)
def refresh_schedule(
    context: dg.ScheduleEvaluationContext,
    status_store: StatusStoreResource,
    automation_settings: AutomationSettingsResource,
) -> list[dg.RunRequest] | dg.SkipReason:
    """Request `scrape` runs over ranges of stale tasks with `refresh_older_than_seconds` set,
    so tasks in a range that are still fresh are skipped by the run itself."""
    max_age_seconds = automation_settings.refresh_max_age_hours * 3600.0
    layout = status_store.layout()
    stale, succeeded = stale_keys(iter_statuses(layout.status_dir), utc_now(), max_age_seconds)
    if not stale:
        return dg.SkipReason("no task is older than the maximum age")
    ordered = context.instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME)
    ranges = plan_ranges(ordered, stale, passable=succeeded)
    config = {"ops": {SCRAPE: {"config": {"refresh_older_than_seconds": max_age_seconds}}}}
    stamp = context.scheduled_execution_time.isoformat() if context.scheduled_execution_time else ""
    return [
        range_run_request(
            SCRAPE_KEY,
            first,
            last,
            reason="refresh",
            fingerprint=stamp,
            run_config=config,
        )
        for first, last in ranges
    ]
