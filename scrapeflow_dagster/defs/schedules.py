"""Schedules: refresh tasks whose `scrape` is older than a maximum age."""

import os
from datetime import UTC, datetime, timedelta

import dagster as dg

from scrapeflow_dagster.defs.partitions import TASKS_PARTITIONS_NAME
from scrapeflow_dagster.defs.resources import StatusStoreResource
from scrapeflow_dagster.defs.run_requests import range_run_request
from scrapeflow_dagster.engine.retry_plan import plan_ranges
from scrapeflow_dagster.engine.status import iter_statuses

REFRESH_MAX_AGE_ENV = "SCRAPEFLOW_REFRESH_MAX_AGE_HOURS"
# Deployment setting, read when the definitions load (Dagster needs the cron then).
REFRESH_CRON_ENV = "SCRAPEFLOW_REFRESH_CRON"


def stale_keys(statuses: dict[str, str], cutoff: datetime) -> set[str]:
    """Keys whose last successful scrape (`scrape_last_run`) is older than `cutoff`."""
    limit = str(cutoff.replace(tzinfo=None))
    return {key for key, last_run in statuses.items() if last_run and last_run < limit}


@dg.schedule(
    name="refresh_schedule",
    cron_schedule=os.environ.get(REFRESH_CRON_ENV) or "0 3 * * *",
    target=dg.AssetSelection.assets("scrape"),
    description=(
        "Daily at 03:00 ($SCRAPEFLOW_REFRESH_CRON): re-scrape tasks older than "
        "$SCRAPEFLOW_REFRESH_MAX_AGE_HOURS (7 days)."
    ),
)
def refresh_schedule(
    context: dg.ScheduleEvaluationContext, status_store: StatusStoreResource
) -> list[dg.RunRequest] | dg.SkipReason:
    """Request `scrape` runs over ranges of stale tasks with `refresh_older_than_seconds` set,
    so tasks in a range that are still fresh are skipped by the run itself."""
    max_age_seconds = float(os.environ.get(REFRESH_MAX_AGE_ENV, "168")) * 3600
    layout = status_store.layout()
    cutoff = datetime.now(UTC) - timedelta(seconds=max_age_seconds)
    last_runs = {
        key: str(status.get("scrape_last_run") or "")
        for key, status in iter_statuses(layout.status_dir)
        if status.get("scrape_status") == "SUCCESS"
    }
    stale = stale_keys(last_runs, cutoff)
    if not stale:
        return dg.SkipReason("no task is older than the maximum age")
    ordered = context.instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME)
    ranges = plan_ranges(ordered, stale, passable=set(last_runs))
    config = {"ops": {"scrape": {"config": {"refresh_older_than_seconds": max_age_seconds}}}}
    stamp = context.scheduled_execution_time.isoformat() if context.scheduled_execution_time else ""
    return [
        range_run_request(
            dg.AssetKey("scrape"),
            first,
            last,
            reason="refresh",
            fingerprint=stamp,
            run_config=config,
        )
        for first, last in ranges
    ]
