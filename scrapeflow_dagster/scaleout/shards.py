"""How a run's partitions are split into shards, how many, and where shard results are kept.

A shard is a disjoint slice of the run's sorted partition keys; the slices of one run cover
every key exactly once, so two shards never take the same task.
"""

import os
from collections.abc import Sequence
from typing import NamedTuple

import dagster as dg

from scrapeflow_dagster.defs.resources import StatusStoreResource

SHARDS_ENV = "SCRAPEFLOW_SHARDS"
SHARD_REPORTS_DIR = "shard-reports"
SHARD_IO_MANAGER_KEY = "shard_io_manager"


class ShardPlan(NamedTuple):
    """What one shard step runs: its keys and the run's step options."""

    position: int  # 0-based
    total: int  # shards in the run
    keys: list[str]
    force: bool = False
    max_age_seconds: float | None = None


def split_keys(keys: Sequence[str], shards: int) -> list[list[str]]:
    """Split `keys` (sorted first) into at most `shards` contiguous slices of near-equal size.

    Contiguous slices of sorted keys keep a host's readable keys (`<host>-...`) together, so a
    host's tasks mostly land in one shard. Empty slices are left out.

    Raises:
        ValueError: naming `shards` when it is not positive.
    """
    if shards < 1:
        raise ValueError(f"shards must be at least 1, got {shards}")
    ordered = sorted(keys)
    count = min(shards, len(ordered))
    return [
        ordered[i * len(ordered) // count : (i + 1) * len(ordered) // count] for i in range(count)
    ]


class ShardSettingsResource(dg.ConfigurableResource):
    """How many shards (separate steps) a sharded executor asset splits its run into.

    `shards` 0 means one per core of the machine that plans the run (`os.cpu_count()`); set it
    with `SCRAPEFLOW_SHARDS` (through `dg.EnvVar`, see `shard_settings_from_env`). With the
    Celery executor, set it to the total worker concurrency.
    """

    shards: int = 0

    def shard_count(self) -> int:
        """The number of shards to plan.

        Raises:
            ValueError: naming the field when it is negative.
        """
        if self.shards < 0:
            raise ValueError(
                f"shard_settings.shards must be 0 (one per core) or more, got {self.shards}"
            )
        return self.shards or os.cpu_count() or 1


def shard_settings_from_env() -> ShardSettingsResource:
    """The shard settings, `shards` wired to `SCRAPEFLOW_SHARDS` when that is set."""
    if os.environ.get(SHARDS_ENV):
        return ShardSettingsResource(shards=dg.EnvVar.int(SHARDS_ENV))
    return ShardSettingsResource()


class ShardReportsIOManager(dg.ConfigurableIOManagerFactory):
    """Keeps shard plans and reports as pickles under `<data dir>/shard-reports/`.

    Shards may run on other machines (Celery workers): the data dir is the storage every worker
    mounts, so what one step writes there the next step reads wherever it runs. `data_dir`
    None means `$SCRAPEFLOW_DATA_DIR` (as `StatusStoreResource`).
    """

    data_dir: str | None = None

    def create_io_manager(self, context: dg.InitResourceContext) -> dg.IOManager:
        """A filesystem IO manager rooted in the data dir's shard-reports folder."""
        root = StatusStoreResource(data_dir=self.data_dir).layout().root / SHARD_REPORTS_DIR
        return dg.FilesystemIOManager(base_dir=str(root)).create_io_manager(context)


def shard_resources(
    *, data_dir: str | None = None
) -> dict[str, dg.ConfigurableResource | dg.ConfigurableIOManagerFactory]:
    """The resources sharded assets need besides the executor assets' own.

    Args:
        data_dir: the data dir, as given to `StatusStoreResource` (None: the environment's).
    """
    return {
        "shard_settings": shard_settings_from_env(),
        SHARD_IO_MANAGER_KEY: ShardReportsIOManager(data_dir=data_dir),
    }
