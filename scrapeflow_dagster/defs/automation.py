"""What the sensors and the schedule share: the executor chain they act on, tick settings."""

import os
from collections.abc import Sequence
from dataclasses import dataclass

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
