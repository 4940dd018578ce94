"""A run's planned events as one event per asset, stored as the rows of one event per partition.

At run creation Dagster writes an ASSET_MATERIALIZATION_PLANNED event per (asset, partition) of
the run: 10,000 partitions cost ~2 s of events built, logged and serialised one by one before
the run starts. A storage that says it supports partition subsets in planned events gets one
event per asset naming the run's partitions instead; stock Dagster then stores that one event,
and the partitions of a run that fails are not marked FAILED (nothing per partition says the
run planned them). The batched storages say so and store each such event as exactly the rows
stock Dagster writes for the per-partition events (the same event JSON, partition column and
`asset_keys` values): every reader (partition states, failed and in progress, the UI, the
retry sensor) sees what it sees on a stock home. The rows come from one serialised template
whose partition is swapped per row, not from one event each.
"""

import itertools
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from dagster._core.events import AssetMaterializationPlannedData, DagsterEventType
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage

Row = dict[str, Any]
# Rows written per transaction: about 12 MiB of rows in memory at a time.
PLANNED_ROWS_PER_CHUNK = 10_000
# Stands for the partition key in the template (a key of this form is swapped the same way).
_PLACEHOLDER = "scrapeflow-planned-partition-7c1e0b"


def is_planned_subset(event: EventLogEntry) -> bool:
    """Whether `event` is a run's planned event for a set of partitions of one asset."""
    dagster_event = event.dagster_event
    if (
        dagster_event is None
        or dagster_event.event_type != DagsterEventType.ASSET_MATERIALIZATION_PLANNED
    ):
        return False
    data = dagster_event.event_specific_data
    return isinstance(data, AssetMaterializationPlannedData) and data.partitions_subset is not None


class PlannedTemplate:
    """The rows stock Dagster writes for the planned partitions of one planned subset event
    (see `is_planned_subset`): its keys in sorted order, and the rows of any of them.

    Sorted: the order the run's shards take their keys (`scaleout.shards`), not the subset's
    (a set's: random). Each materialisation deletes its partition's planned row, and the next
    planned row written goes beside the last: in random order both touched a page of the table
    and of each of its five indexes per row. A million-task run's planned rows made the process
    that wrote them write 70 GB to disk (23 KB per row, SQLite's 16 KB pages through its WAL
    and back), and the shards' deletes ~485 KB per task more.

    The events are one template (its partition a placeholder) per row: writers take from them
    the run id, the asset key and the `asset_keys` values, which do not depend on the partition.
    """

    def __init__(self, storage: SqlEventLogStorage, event: EventLogEntry) -> None:
        dagster_event = event.get_dagster_event()
        data = dagster_event.event_specific_data
        assert isinstance(data, AssetMaterializationPlannedData) and data.partitions_subset
        self.asset_key = data.asset_key
        self.keys: list[str] = sorted(data.partitions_subset.get_partition_keys())
        self._event = event._replace(
            dagster_event=dagster_event._replace(
                event_specific_data=AssetMaterializationPlannedData(
                    data.asset_key, partition=_PLACEHOLDER
                )
            )
        )
        self._row = storage._event_to_row(self._event)
        self._head, placeholder, self._tail = self._row["event"].partition(json.dumps(_PLACEHOLDER))
        if not placeholder or _PLACEHOLDER in self._tail:
            raise RuntimeError("planned event template: the partition is not where it was expected")

    def rows(self, keys: Sequence[str]) -> tuple[list[EventLogEntry], list[Row]]:
        """The events and rows of the planned partitions `keys`."""
        head, tail, row = self._head, self._tail, self._row
        rows = [{**row, "event": head + json.dumps(key) + tail, "partition": key} for key in keys]
        return [self._event] * len(rows), rows

    def chunks(
        self, keys: Iterable[str] | None = None, *, chunk: int | None = None
    ) -> Iterator[tuple[list[EventLogEntry], list[Row]]]:
        """The rows of `keys` (default: all, sorted), `chunk` at a time (default
        `PLANNED_ROWS_PER_CHUNK`): all of a run's rows at once held ~1.2 KB per task per asset
        (110 MiB per asset at 100,000 tasks, measured) in the process that creates the run."""
        remaining = iter(self.keys if keys is None else keys)
        size = chunk or PLANNED_ROWS_PER_CHUNK
        while part := list(itertools.islice(remaining, size)):
            yield self.rows(part)


def per_partition_rows(
    storage: SqlEventLogStorage, event: EventLogEntry, *, chunk: int | None = None
) -> Iterator[tuple[list[EventLogEntry], list[Row]]]:
    """The events and rows stock Dagster writes for the planned partitions of `event` (see
    `is_planned_subset`), in sorted key order, `chunk` rows at a time (`PlannedTemplate`)."""
    return PlannedTemplate(storage, event).chunks(chunk=chunk)
