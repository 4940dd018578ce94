"""How a run's partitions are split into shards, how many, and where shard results are kept.

A shard is a disjoint slice of the run's sorted partition keys; the slices of one run cover
every key exactly once, so two shards never take the same task.

The shipped assets are sharded when this machine has more than one core (one shard per core),
unless `SCRAPEFLOW_SHARDS=1` says otherwise; a run is split only as far as each shard gets at
least `min_tasks_per_shard` tasks, because a shard is a step process (2-6 s to start and stop)
and a small run gains nothing from a second one.
"""

import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import dagster as dg

from scrapeflow_dagster.lib.resources import StatusStoreResource
from scrapeflow_dagster.scaleout.sizing import MIN_TASKS_PER_SHARD, SHARDS_ENV, shards_for

SHARD_REPORTS_DIR = "shard-reports"
SHARD_IO_MANAGER_KEY = "shard_io_manager"
# The tag of a sharded asset's shard step: its fan-out (one step per shard) is known before its
# plan step runs (`scaleout.one_process_runs`).
SHARD_TAG = "scrapeflow/shard"
SHARD_OP_TAGS = {SHARD_TAG: "true"}
# Shard plans and reports of runs that failed are kept this long (re-execution from failure
# reads them); those of runs that succeeded are removed when the run ends.
KEEP_FAILED_REPORTS_SECONDS = 7 * 24 * 3600


class ShardPlan(NamedTuple):
    """What one shard step runs: its keys, the run's step options and selected assets."""

    position: int  # 0-based
    total: int  # shards in the run
    keys: list[str]
    force: bool = False
    max_age_seconds: float | None = None
    assets: tuple[str, ...] = ()  # the chain's assets the run selected (empty: all)
    follow_links: bool = False  # a crawl streamed through the run (`StepConfig.follow_links`)


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
    Celery executor, set it to the total worker concurrency. A run uses fewer shards when it
    has fewer than `min_tasks_per_shard` tasks per shard (a small run is one shard).
    """

    shards: int = 0
    min_tasks_per_shard: int = MIN_TASKS_PER_SHARD

    def shard_count(self, tasks: int | None = None) -> int:
        """The number of shards to plan for a run of `tasks` tasks (None: the most allowed).

        Raises:
            ValueError: naming the field when `shards` is negative or `min_tasks_per_shard`
                below one.
        """
        if self.shards < 0:
            raise ValueError(
                f"shard_settings.shards must be 0 (one per core) or more, got {self.shards}"
            )
        if self.min_tasks_per_shard < 1:
            raise ValueError(
                "shard_settings.min_tasks_per_shard must be at least 1, "
                f"got {self.min_tasks_per_shard}"
            )
        most = self.shards or os.cpu_count() or 1
        return most if tasks is None else shards_for(tasks, most, self.min_tasks_per_shard)


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
        return dg.FilesystemIOManager(base_dir=str(self.root())).create_io_manager(context)

    def root(self) -> Path:
        """The shard-reports folder (one subfolder per run)."""
        return StatusStoreResource(data_dir=self.data_dir).layout().root / SHARD_REPORTS_DIR


def remove_shard_reports(
    root: Path,
    run_id: str,
    op_names: Sequence[str],
    *,
    keep_failed_seconds: float = KEEP_FAILED_REPORTS_SECONDS,
) -> int:
    """Remove what the steps of ops `op_names` wrote in run `run_id` (an asset's plan and
    shards: the asset's run succeeded, nothing reads them again), then the folders of runs
    untouched for `keep_failed_seconds` (failed runs keep theirs that long, for a re-execution
    from failure). Returns how many folders went.

    Other assets of the same run may still be writing theirs, so only the named ops' step
    folders (`<root>/<run id>/<step key>/`, step keys such as `scrape.scrape_shard[shard_0]`)
    go, and the run's folder once it is empty. A folder that vanishes meanwhile (two collect
    steps pruning at once) is skipped.
    """
    removed = 0
    run_dir = root / run_id
    for entry in _entries(run_dir):
        op = entry.name.rsplit(".", 1)[-1].split("[", 1)[0]
        if op in op_names:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed += 1
    try:
        run_dir.rmdir()
    except OSError:  # not empty (another asset's steps) or gone
        pass
    cutoff = time.time() - keep_failed_seconds
    for entry in _entries(root):
        try:
            stale = entry.is_dir(follow_symlinks=False) and entry.stat().st_mtime < cutoff
        except FileNotFoundError:
            continue
        if stale:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed += 1
    return removed


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    try:
        return list(os.scandir(folder))
    except FileNotFoundError:
        return []


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
