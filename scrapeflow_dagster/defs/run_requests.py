"""Run requests over partition ranges of the executor assets (Dagster runs take ranges)."""

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg

RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"


def range_run_request(
    asset_key: dg.AssetKey,
    first: str,
    last: str,
    *,
    reason: str,
    fingerprint: str = "",
    run_config: Mapping[str, Any] | None = None,
) -> dg.RunRequest:
    """A run of one asset over partitions `first...last`, with a run key against duplicates.

    `fingerprint` changes when the same range should run again (e.g. the failure counts of
    its tasks), so an unchanged plan re-evaluated by a sensor never launches twice.
    """
    digest = hashlib.sha1(f"{first}\0{last}\0{fingerprint}".encode()).hexdigest()[:16]
    return dg.RunRequest(
        run_key=f"{reason}:{asset_key.to_user_string()}:{digest}",
        asset_selection=[asset_key],
        run_config=dict(run_config or {}),
        tags={RANGE_START_TAG: first, RANGE_END_TAG: last, "scrapeflow/reason": reason},
    )


def chunked_ranges(keys: Sequence[str], size: int) -> list[tuple[str, str]]:
    """Contiguous `(first, last)` chunks of `keys`, which must be in partition order."""
    return [(keys[i], keys[min(i + size, len(keys)) - 1]) for i in range(0, len(keys), size)]
