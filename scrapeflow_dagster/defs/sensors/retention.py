"""The retention sensor: prunes the Dagster home as its `retention:` block says
(`storage/retention/prune.py`), a little at every tick, in the daemon beside the runs."""

import os
from pathlib import Path

import dagster as dg
import yaml

from scrapeflow_dagster.defs.automation import interval_seconds, promised_sensor_status
from scrapeflow_dagster.storage.retention.prune import PruneReport, prune

# Dagster gives a sensor evaluation 60 s (DAGSTER_SENSOR_GRPC_TIMEOUT_SECONDS); a chunk takes
# tens of milliseconds (about a second on a million-task Postgres home), so none is started
# after this much of it, leaving the rest to a pass's end (run logs, VACUUM, one index rebuilt).
RETENTION_TICK_BUDGET_SECONDS = 20.0
NO_RETENTION = "dagster.yaml has no retention block under event_log_storage: nothing to prune"


def home_has_retention(home: str | None = None) -> bool:
    """Whether the Dagster home's dagster.yaml (`$DAGSTER_HOME` by default) has a `retention`
    block in its event log storage's config; False when it cannot be read."""
    folder = home if home is not None else os.environ.get("DAGSTER_HOME")
    if not folder:
        return False
    try:
        config = yaml.safe_load((Path(folder) / "dagster.yaml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return False
    storage = config.get("event_log_storage") if isinstance(config, dict) else None
    storage_config = storage.get("config") if isinstance(storage, dict) else None
    return isinstance(storage_config, dict) and storage_config.get("retention") is not None


def describe(report: PruneReport) -> str:
    """A tick's outcome in one line: rows deleted by kind, run logs, bytes."""
    kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(report.deleted_by_kind.items()))
    text = (
        f"deleted {kinds or 'no asset events'}; run logs of {report.run_logs_removed} runs;"
        f" event log {report.bytes_before} -> {report.bytes_after} bytes"
    )
    if report.reindexed:
        text += f"; indexes rebuilt: {', '.join(report.reindexed)}"
    if report.complete:
        return text
    return (
        text + f" (tick budget reached: the next tick goes on after event id {report.horizon_id})"
    )


def build_retention_sensor() -> dg.SensorDefinition:
    """The retention sensor. It starts running on a home whose dagster.yaml has a retention
    block (unless `$SCRAPEFLOW_SENSORS_DEFAULT` is `stopped`); it skips on any other."""
    running = promised_sensor_status() == dg.DefaultSensorStatus.RUNNING and home_has_retention()

    @dg.sensor(
        name="retention_sensor",
        minimum_interval_seconds=interval_seconds(60),
        default_status=dg.DefaultSensorStatus.RUNNING
        if running
        else dg.DefaultSensorStatus.STOPPED,
    )
    def retention_sensor(context: dg.SensorEvaluationContext) -> dg.SkipReason:
        """Deletes the asset events a newer one of the same partition superseded, and old runs'
        logs, as the home's `retention:` block says; its cursor is the event id up to which
        every partition is pruned."""
        storage = context.instance.event_log_storage
        policy = getattr(storage, "retention_policy", None)
        if policy is None:
            return dg.SkipReason(NO_RETENTION)
        # The cursor is the id up to which every partition's events are pruned: the first
        # tick starts from 0 (every partition), a tick the budget cuts short leaves it where it
        # got to, and the next goes on from there.
        after_id = int(context.cursor) if context.cursor else 0
        report = prune(
            storage, policy, budget_seconds=RETENTION_TICK_BUDGET_SECONDS, after_id=after_id
        )
        if report.skipped:
            return dg.SkipReason(report.skipped)
        if report.horizon_id > after_id:
            context.update_cursor(str(report.horizon_id))
        return dg.SkipReason(describe(report))

    return retention_sensor
