"""The `tasks` partitions as Dagster sees them: the status of each, and the tags of a run over a
range of them."""

from collections.abc import Mapping, Sequence

import dagster as dg

from scrapeflow_dagster.defs.automation import RANGE_END_TAG, RANGE_START_TAG
from scrapeflow_dagster.lib.partitions import tasks_partitions_def

Status = dg.AssetPartitionStatus


def range_tags(first: str, last: str) -> dict[str, str]:
    """The tags of a run over partitions `first...last`."""
    return {RANGE_START_TAG: first, RANGE_END_TAG: last}


def partition_statuses(
    instance: dg.DagsterInstance, asset: str, keys: Sequence[str]
) -> dict[str, Status | None]:
    """Dagster's status of each of `keys` for `asset` (None: missing)."""
    found = (
        instance.get_status_by_partition(dg.AssetKey(asset), list(keys), tasks_partitions_def)
        or {}  # None for an asset that never ran
    )
    return {key: found.get(key) for key in keys}


def keys_with(found: Mapping[str, Status | None], status: Status | None) -> set[str]:
    """The keys of `found` with `status`."""
    return {key for key, value in found.items() if value == status}
