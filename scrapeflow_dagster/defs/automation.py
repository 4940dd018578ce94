"""What the sensors and the schedules share: the executor chain they act on, tick settings,
and run requests over partition ranges (Dagster runs take ranges)."""

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg

# Deployment setting, read when the definitions load: how often the daemon may tick each
# sensor (Dagster needs it at definition time, so it cannot be a resource field).
INTERVAL_ENV = "SCRAPEFLOW_SENSOR_INTERVAL_SECONDS"
MAX_RUNS_PER_TICK = 10


def interval_seconds(default_seconds: int) -> int:
    """`$SCRAPEFLOW_SENSOR_INTERVAL_SECONDS`, or `default_seconds`."""
    value = os.environ.get(INTERVAL_ENV)
    return int(value) if value else default_seconds


@dataclass(frozen=True)
class ExecutorChain:
    """The executor assets in dependency order, with what each one requires."""

    assets: tuple[dg.AssetsDefinition, ...]

    @classmethod
    def of(cls, assets: Sequence[dg.AssetsDefinition]) -> "ExecutorChain":
        """The chain of `assets` (listed upstream first, as `executor_asset` builds them).

        Raises:
            ValueError: when the first asset requires another one (it must fetch).
        """
        chain = cls(tuple(assets))
        if not chain.assets or chain.requires(chain.assets[0]):
            raise ValueError("the first executor asset must need no other (e.g. scrape)")
        return chain

    @property
    def keys(self) -> list[dg.AssetKey]:
        """Every asset key of the chain, upstream first (a sensor's target)."""
        return [asset.key for asset in self.assets]

    @property
    def root(self) -> dg.AssetKey:
        """The asset that fetches (`scrape`): new tasks and re-fetches start there."""
        return self.assets[0].key

    @staticmethod
    def requires(asset: dg.AssetsDefinition) -> list[dg.AssetKey]:
        """The executor assets `asset` needs to have succeeded first."""
        return [dep.asset_key for spec in asset.specs for dep in spec.deps]


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
