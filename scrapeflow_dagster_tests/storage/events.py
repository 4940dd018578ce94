"""Real Dagster event log entries, built the way Dagster builds them, for storage tests."""

import dataclasses
import json
import time
from typing import Any

import dagster as dg
from dagster._core.definitions.data_version import DATA_VERSION_TAG
from dagster._core.events import (
    AssetMaterializationPlannedData,
    AssetObservationData,
    AssetWipedData,
    DagsterEvent,
    DagsterEventType,
    StepMaterializationData,
)
from dagster._core.events.log import EventLogEntry

from scrapeflow_dagster.storage.batches.lean_writes import STOCK_WRITES

RUN = "0f1e2d3c-0000-4000-8000-000000000001"
OTHER_RUN = "0f1e2d3c-0000-4000-8000-000000000002"
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


def _step_event(
    run_id: str, event_type: DagsterEventType, data: Any, message: str
) -> EventLogEntry:
    """An event of `event_type` with `data`, logged by the step."""
    event = DagsterEvent(
        event_type_value=event_type.value,
        job_name=JOB_NAME,
        step_key=STEP_KEY,
        event_specific_data=data,
        message=message,
    )
    return _entry(run_id, event)


def planned(run_id: str, asset: str, partition: str) -> EventLogEntry:
    """An ASSET_MATERIALIZATION_PLANNED of one partition, as run creation logs it."""
    data = AssetMaterializationPlannedData(dg.AssetKey(asset), partition=partition)
    event = DagsterEvent.build_asset_materialization_planned_event(JOB_NAME, STEP_KEY, data)
    return _entry(run_id, event)


def planned_subset(run_id: str, asset: str, keys: list[str]) -> list[EventLogEntry]:
    """A run's planned event of `keys` as one event (what run creation logs to a storage that
    takes partition subsets), then the per-partition events stock Dagster logs instead, all at
    the same time, in sorted key order: the order the batched storages write them (the shards'
    order, `storage.planned`; stock Dagster's own depends on how the run named its partitions)."""
    partitions_def = dg.DynamicPartitionsDefinition(name="tasks")
    subset = partitions_def.subset_with_partition_keys(keys).to_serializable_subset()
    one = _entry(
        run_id,
        DagsterEvent.build_asset_materialization_planned_event(
            JOB_NAME,
            STEP_KEY,
            AssetMaterializationPlannedData(dg.AssetKey(asset), partitions_subset=subset),
        ),
    )
    each = [
        one._replace(
            dagster_event=DagsterEvent.build_asset_materialization_planned_event(
                JOB_NAME,
                STEP_KEY,
                AssetMaterializationPlannedData(dg.AssetKey(asset), partition=key),
            )
        )
        for key in sorted(subset.get_partition_keys())
    ]
    return [one, *each]


# Partition keys whose JSON spelling is not the key itself.
ODD_KEYS = ['quote"d', "back\\slash", "ünï/cødé", "a b"]


def store_planned_both_ways(stock: Any, batched: Any, keys: list[str]) -> list[EventLogEntry]:
    """Store a run's planned partitions `keys` in the `stock` storage one event each and in the
    `batched` one as one event (as run creation logs it to each), between a materialisation and
    a log line, then dispose both; returns the per-partition events."""
    assert batched.supports_partition_subset_in_asset_materialization_planned_events
    assert not stock.supports_partition_subset_in_asset_materialization_planned_events
    one, *each = planned_subset(RUN, "flaky", keys)
    before, after = materialized(RUN, "flaky", keys[0]), log_line(RUN)
    for event in (before, *each, after):
        stock.store_event(event)
    for event in (before, one, after):
        batched.store_event(event)
    batched.dispose()
    stock.dispose()
    return each


def materialized(
    run_id: str, asset: str, partition: str, version: str | None = "v1"
) -> EventLogEntry:
    """An ASSET_MATERIALIZATION of one partition with a data version tag (indexed by Dagster),
    or without tags (`version` None: as our executor assets log them)."""
    materialization = dg.AssetMaterialization(
        asset_key=asset,
        partition=partition,
        metadata={"partition": partition},
        tags={DATA_VERSION_TAG: version} if version is not None else None,
    )
    data = StepMaterializationData(materialization)
    return _step_event(
        run_id, DagsterEventType.ASSET_MATERIALIZATION, data, f"materialized {asset} {partition}"
    )


def observed(run_id: str, asset: str, partition: str) -> EventLogEntry:
    """An ASSET_OBSERVATION of one partition (what a run logs for a failed task)."""
    observation = dg.AssetObservation(
        asset_key=asset,
        partition=partition,
        description="HttpStatusError: HTTP response 404",
        metadata={"error_kind": "permanent", "attempts": 1},
        tags={DATA_VERSION_TAG: "observed"},
    )
    data = AssetObservationData(observation)
    return _step_event(
        run_id, DagsterEventType.ASSET_OBSERVATION, data, f"observed {asset} {partition}"
    )


def log_line(run_id: str, message: str = "a log line") -> EventLogEntry:
    """A plain log message of the run (no Dagster event)."""
    return _entry(run_id, None, message)


def run_failed(run_id: str) -> EventLogEntry:
    """The run's RUN_FAILURE, as its end logs it."""
    event = DagsterEvent(event_type_value=DagsterEventType.RUN_FAILURE.value, job_name=JOB_NAME)
    return _entry(run_id, event)


def two_runs() -> list[EventLogEntry]:
    """Planned events, a log line, materialisations of two assets (with and without tags) and
    observations of failed partitions (one after a materialisation of its asset, one after a
    planned event of another run), a runless one, a second run."""
    events = [planned(RUN, "a", f"p{i}") for i in range(6)] + [planned(RUN, "b", "p0")]
    events.append(log_line(RUN))
    events += [materialized(RUN, "a", f"p{i}", None if i % 2 else "v1") for i in range(5)]
    events.append(observed(RUN, "a", "p5"))
    events.append(materialized(RUN, "b", "p0", version="v7"))
    events.append(observed(RUN, "b", "p1"))
    events.append(materialized("", "b", "p1"))  # runless: reported from outside any run
    events += [planned(OTHER_RUN, "a", "p0"), materialized(OTHER_RUN, "a", "p0", version="v2")]
    events += [planned(RUN, "b", "p2")]
    # An observation after a planned event, in another run: the run of the planned event
    # stays `last_run_id` (an observation sets only the timestamp).
    events += [observed(OTHER_RUN, "b", "p2")]
    return events


def wiped(asset: str) -> EventLogEntry:
    """An ASSET_WIPED of `asset`, as `wipe_assets` logs it (outside any run)."""
    data = AssetWipedData(asset_key=dg.AssetKey(asset), partition_keys=None)
    return _step_event("", DagsterEventType.ASSET_WIPED, data, f"wiped {asset}")


# The `lean_writes` config of a batched storage that writes every row stock Dagster writes (the
# tests that compare its rows with stock's row for row), from `lean_writes.STOCK_WRITES`.
STOCK_ROWS = dataclasses.asdict(STOCK_WRITES)
# The same as the value of a `lean_writes:` key in dagster.yaml (`homes.write_home` options).
STOCK_ROWS_YAML = "{" + ", ".join(f"{k}: {json.dumps(v)}" for k, v in STOCK_ROWS.items()) + "}"
