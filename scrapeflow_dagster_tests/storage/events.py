"""Real Dagster event log entries, built the way Dagster builds them, for storage tests."""

import time

import dagster as dg
from dagster._core.definitions.data_version import DATA_VERSION_TAG
from dagster._core.events import (
    AssetMaterializationPlannedData,
    DagsterEvent,
    DagsterEventType,
    StepMaterializationData,
)
from dagster._core.events.log import EventLogEntry

JOB_NAME = "__ASSET_JOB"
STEP_KEY = "flaky"


def _entry(run_id: str, dagster_event: DagsterEvent | None, message: str = "") -> EventLogEntry:
    return EventLogEntry(
        error_info=None,
        level="DEBUG",
        user_message=message,
        run_id=run_id,
        timestamp=time.time(),
        step_key=STEP_KEY,
        job_name=JOB_NAME,
        dagster_event=dagster_event,
    )


def planned(run_id: str, asset: str, partition: str) -> EventLogEntry:
    """An ASSET_MATERIALIZATION_PLANNED of one partition, as run creation logs it."""
    data = AssetMaterializationPlannedData(dg.AssetKey(asset), partition=partition)
    event = DagsterEvent.build_asset_materialization_planned_event(JOB_NAME, STEP_KEY, data)
    return _entry(run_id, event)


def materialized(run_id: str, asset: str, partition: str, version: str = "v1") -> EventLogEntry:
    """An ASSET_MATERIALIZATION of one partition with a data version tag (indexed by Dagster)."""
    materialization = dg.AssetMaterialization(
        asset_key=asset,
        partition=partition,
        metadata={"partition": partition},
        tags={DATA_VERSION_TAG: version},
    )
    event = DagsterEvent(
        event_type_value=DagsterEventType.ASSET_MATERIALIZATION.value,
        job_name=JOB_NAME,
        step_key=STEP_KEY,
        event_specific_data=StepMaterializationData(materialization),
        message=f"materialized {asset} {partition}",
    )
    return _entry(run_id, event)


def log_line(run_id: str, message: str = "a log line") -> EventLogEntry:
    """A plain log message of the run (no Dagster event)."""
    return _entry(run_id, None, message)
