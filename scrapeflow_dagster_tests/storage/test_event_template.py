"""`EventTemplates` writes exactly the text Dagster's `serialize_value` writes: for the
(planned) materialisations a real run logged, for every metadata layout our executor assets
use, for text that JSON must escape, and for events that differ only where a template is
shared; anything else is Dagster's own."""

import logging
import time

import dagster as dg
import pytest
from dagster._core.events import (
    AssetMaterializationPlannedData,
    DagsterEvent,
    DagsterEventType,
    StepMaterializationData,
)
from dagster._core.events.log import EventLogEntry
from dagster_shared.serdes import serialize_value

from scrapeflow_dagster.storage.batches.templates import EventTemplates

partitions = dg.StaticPartitionsDefinition(["a", "b\u00e9", 'c"quoted\\', "d\x01ctl", "e\u2603"])


@dg.asset(partitions_def=partitions)
def logged(context: dg.AssetExecutionContext) -> None:
    key = context.partition_key
    context.log_event(
        dg.AssetMaterialization(
            asset_key="logged",
            partition=key,
            metadata={"attempts": 2, "url": f"http://x/{key}?q=1&r=\u00e9", "size": 10**12},
        )
    )


def entry(partition: str, metadata: dict, *, run_id: str = "run-1", tags: dict | None = None):
    """A materialisation built as `partition_events.materialization_logger` builds one."""
    materialization = dg.AssetMaterialization(
        asset_key=dg.AssetKey("scrape"), partition=partition, metadata=metadata
    )
    event = DagsterEvent(
        event_type_value=DagsterEventType.ASSET_MATERIALIZATION.value,
        job_name="__ASSET_JOB",
        step_handle=None,
        node_handle=None,
        step_kind_value="COMPUTE",
        logging_tags=tags or {"step_key": "scrape"},
        event_specific_data=StepMaterializationData(materialization),
        message="Materialized value.",
        pid=4242,
    )
    return _log_entry(event, run_id, "Materialized value.", "scrape")


def _log_entry(event: DagsterEvent, run_id: str, message: str, step_key: str) -> EventLogEntry:
    """`event` in the entry Dagster's log manager stores it in."""
    return EventLogEntry(
        error_info=None,
        level=logging.DEBUG,
        user_message=message,
        run_id=run_id,
        timestamp=time.time(),
        step_key=step_key,
        job_name="__ASSET_JOB",
        dagster_event=event,
    )


def test_events_a_real_run_logged_come_out_as_dagster_writes_them() -> None:
    templates = EventTemplates()
    with dg.instance_for_test() as instance:
        for key in partitions.get_partition_keys():
            assert dg.materialize([logged], instance=instance, partition_key=key).success
        entries = [
            record.event_log_entry
            for kind in (
                DagsterEventType.ASSET_MATERIALIZATION,
                DagsterEventType.ASSET_MATERIALIZATION_PLANNED,
            )
            for record in instance.get_event_records(dg.EventRecordsFilter(event_type=kind))
        ]
    runs = len(partitions.get_partition_keys())
    assert len(entries) == 3 * runs  # ours, the output's, the planned one
    for logged_entry in entries:
        assert templates.serialize(logged_entry) == serialize_value(logged_entry)
    assert templates.templated == 3 * runs  # a shape each (one per run): none by Dagster


@pytest.mark.parametrize(
    "metadata",
    [
        {"attempts": 1, "url": "http://h/p", "http_status": 200, "size": 5, "md5": "ab"},
        {"attempts": 3, "url": 'http://h/"q"\\\n\t\u2028', "http_status": 304, "size": 0},
        {"attempts": 1, "skipped": True},
        {"attempts": 1, "skipped": False},
        {"attempts": -1, "size": 2**70},
        {},
    ],
)
def test_every_metadata_layout_comes_out_as_dagster_writes_it(metadata: dict) -> None:
    templates = EventTemplates()
    for n, partition in enumerate(["k-1", "k\u00e9-2", 'k"3', "k4"]):
        varied = {k: (v + n if type(v) is int else v) for k, v in metadata.items()}
        logged_entry = entry(partition, varied)
        assert templates.serialize(logged_entry) == serialize_value(logged_entry)


def test_a_template_is_never_shared_by_events_that_differ_elsewhere() -> None:
    templates = EventTemplates()
    layout = {"attempts": 1, "url": "http://h/p"}
    first = entry("k", layout, run_id="run-1")
    others = [
        entry("k", layout, run_id="run-2"),
        entry("k", layout, tags={"step_key": "other"}),
        entry("k", {"url": "http://h/p", "attempts": 1}),  # the same labels, another order
        entry("k", {"attempts": 1, "url": dg.MetadataValue.url("http://h/p")}),  # another type
    ]
    for logged_entry in [first, *others, first]:
        assert templates.serialize(logged_entry) == serialize_value(logged_entry)
    assert templates.templated == 4  # the URL metadata value is serialised by Dagster


def planned(partition: str, *, run_id: str = "run-1", message: str = "planned") -> EventLogEntry:
    """A planned materialisation as `executor_events.plan_in_run` builds one."""
    event = DagsterEvent(
        event_type_value=DagsterEventType.ASSET_MATERIALIZATION_PLANNED.value,
        job_name="__ASSET_JOB",
        message=message,
        event_specific_data=AssetMaterializationPlannedData(dg.AssetKey("pages"), partition),
        step_key="executor_chain",
    )
    return _log_entry(event, run_id, message, "executor_chain")


def test_planned_materialisations_share_a_template_and_come_out_as_dagster_writes_them() -> None:
    templates = EventTemplates()
    entries = [planned(key) for key in ["a", "b\u00e9", 'c"q\\', "d\x01"]]
    entries += [planned("a", run_id="run-2"), planned("a", message="other")]
    for logged_entry in entries:
        assert templates.serialize(logged_entry) == serialize_value(logged_entry)
    assert templates.templated == 3  # one run and message; another run; another message


def test_shapes_past_the_cap_are_serialised_by_dagster_and_never_kept() -> None:
    templates = EventTemplates()
    entries = [planned("k", message=f"message {n}") for n in range(300)]
    for logged_entry in entries:
        assert templates.serialize(logged_entry) == serialize_value(logged_entry)
    assert templates.templated == 256
