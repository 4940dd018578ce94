"""Which events wait in the batched storages' per-process buffer (`is_buffered`), which
events end a run, and the buffer's `dagster.yaml` fields with their defaults."""

from typing import Any

import dagster as dg
from dagster._core.events import DagsterEventType
from dagster._core.events.log import EventLogEntry
from dagster._core.instance import RUNLESS_RUN_ID

from scrapeflow_dagster.storage.batches.write import PLANNED_TYPE

DEFAULT_MAX_BUFFERED_EVENTS = 1000
DEFAULT_MAX_BUFFER_SECONDS = 5.0
# One of each per partition in a run: the events serialised from a template.
TEMPLATED_EVENT_TYPES = frozenset(
    {DagsterEventType.ASSET_MATERIALIZATION, DagsterEventType.ASSET_MATERIALIZATION_PLANNED}
)
# Those, and a run's observations (our executor assets log one per failed partition). The
# batch writers store an observation as stock does (its row, tags and `asset_keys` timestamp);
# left unbuffered, each failed task forced a flush of everything before it in the middle of
# the step (12 of them in the demo's first 1.5 s, holding up its fetches).
BUFFERED_EVENT_TYPES = TEMPLATED_EVENT_TYPES | {DagsterEventType.ASSET_OBSERVATION}
_BUFFERED = frozenset(kind.value for kind in BUFFERED_EVENT_TYPES)
# A run's end waits for its planned rows written behind its start (`planned_behind`).
RUN_END_TYPES = frozenset(
    kind.value
    for kind in (
        DagsterEventType.RUN_SUCCESS,
        DagsterEventType.RUN_FAILURE,
        DagsterEventType.RUN_CANCELED,
    )
)


def is_buffered(event: EventLogEntry) -> bool:
    """Whether `event` may wait in the buffer: a run's materialisation, planned one or
    observation, or a planned event outside any run (Dagster never writes those; our executor
    assets write one per task a failing run could not attempt, up to thousands, so they keep it
    missing)."""
    dagster_event = event.dagster_event
    if dagster_event is None:
        return False
    kind = dagster_event.event_type_value  # (`event_type` builds an enum member per call)
    return (
        kind in _BUFFERED
        and dagster_event.asset_key is not None
        and (event.run_id != RUNLESS_RUN_ID or kind == PLANNED_TYPE)
    )


def buffer_config_fields() -> dict[str, Any]:
    """The `dagster.yaml` config fields of the buffer, for a storage's `config_type`."""
    return {
        "max_buffered_events": dg.Field(
            dg.IntSource,
            is_required=False,
            default_value=DEFAULT_MAX_BUFFERED_EVENTS,
            description="Flush a process's asset events when this many wait (0: no buffer).",
        ),
        "max_buffer_seconds": dg.Field(
            float,
            is_required=False,
            default_value=DEFAULT_MAX_BUFFER_SECONDS,
            description="Flush when an event arrives and the oldest waiting is this old.",
        ),
    }
