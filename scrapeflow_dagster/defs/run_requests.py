"""Run requests over partition ranges of the executor assets (Dagster runs take ranges)."""

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg

RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"
RUN_KEY_TAG = "dagster/run_key"


def range_run_request(
    asset_key: dg.AssetKey | Sequence[dg.AssetKey],
    first: str,
    last: str,
    *,
    reason: str,
    fingerprint: str = "",
    run_config: Mapping[str, Any] | None = None,
) -> dg.RunRequest:
    """A run of one asset (or several, in dependency order) over partitions `first...last`,
    with a run key against duplicates.

    `fingerprint` changes when the same range should run again (e.g. the failure counts of
    its tasks), so an unchanged plan re-evaluated by a sensor never launches twice.
    """
    keys = [asset_key] if isinstance(asset_key, dg.AssetKey) else list(asset_key)
    names = "+".join(key.to_user_string() for key in keys)
    digest = hashlib.sha1(f"{first}\0{last}\0{fingerprint}".encode()).hexdigest()[:16]
    return dg.RunRequest(
        run_key=f"{reason}:{names}:{digest}",
        asset_selection=keys,
        run_config=dict(run_config or {}),
        tags={RANGE_START_TAG: first, RANGE_END_TAG: last, "scrapeflow/reason": reason},
    )


def run_exists(instance: dg.DagsterInstance, run_key: str) -> bool:
    """Whether a run was created for `run_key` (the daemon tags each run with its run key)."""
    return bool(instance.get_run_ids(filters=dg.RunsFilter(tags={RUN_KEY_TAG: run_key}), limit=1))
