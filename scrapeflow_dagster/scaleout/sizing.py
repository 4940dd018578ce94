"""How many shards a deployment and a run use: plain arithmetic over the environment, without
Dagster, so that the `scrapeflow` commands can choose an executor before starting `dagster`."""

import os

SHARDS_ENV = "SCRAPEFLOW_SHARDS"
# Below this many tasks per shard a second step process costs more than it saves: measured on
# 2 cores, a step process takes 2-6 s to start and stop, one shard runs ~300 tasks/s.
MIN_TASKS_PER_SHARD = 1_000


def configured_shards() -> int:
    """Shards per run this deployment asks for: `SCRAPEFLOW_SHARDS`, where unset or 0 means one
    per core of this machine.

    Raises:
        ValueError: naming the variable when it is not a whole number >= 0.
    """
    raw = os.environ.get(SHARDS_ENV, "").strip() or "0"
    if not raw.isdigit():
        raise ValueError(f"{SHARDS_ENV} must be 0 (one per core) or a positive number, got {raw!r}")
    return int(raw) or os.cpu_count() or 1


def shards_for(tasks: int, shards: int, min_tasks_per_shard: int = MIN_TASKS_PER_SHARD) -> int:
    """How many of `shards` a run of `tasks` tasks uses: at most one per `min_tasks_per_shard`
    tasks, at least one."""
    return max(1, min(shards, tasks // max(1, min_tasks_per_shard)))


def one_shard_run(tasks: int | None) -> bool:
    """Whether a run of `tasks` tasks of the shipped assets is one step per asset (unsharded)
    or one shard (sharded, too few tasks to split): then it needs no step process of its own.
    None (unknown size): only when unsharded."""
    shards = configured_shards()
    if tasks is None:
        return shards == 1
    return shards_for(tasks, shards) == 1
