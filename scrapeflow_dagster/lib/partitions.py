"""Tasks are the keys of one dynamic partitions definition."""

from collections.abc import Sequence

import dagster as dg

TASKS_PARTITIONS_NAME = "tasks"
tasks_partitions_def = dg.DynamicPartitionsDefinition(name=TASKS_PARTITIONS_NAME)

# The tags Dagster gives a run of one partition, and of a range of them.
PARTITION_TAG = "dagster/partition"
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"

# add_dynamic_partitions writes one row per key; chunks keep each transaction short.
ADD_CHUNK_KEYS = 10_000


def add_task_partitions(instance: dg.DagsterInstance, keys: Sequence[str]) -> int:
    """Add the new ones of `keys` to the `tasks` partitions in chunks; returns how many."""
    if not keys:
        return 0
    existing = set(instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME))
    new = [k for k in dict.fromkeys(keys) if k not in existing]
    for start in range(0, len(new), ADD_CHUNK_KEYS):
        instance.add_dynamic_partitions(TASKS_PARTITIONS_NAME, new[start : start + ADD_CHUNK_KEYS])
    return len(new)


class TaskPartitions:
    """The `tasks` partitions of the instance, added to chunk by chunk: the stored keys are
    read once (`add_task_partitions` reads them per call), then only the new ones are sent."""

    def __init__(self, instance: dg.DagsterInstance) -> None:
        self.instance = instance
        self._existing = set(instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME))

    @classmethod
    def open(cls) -> "TaskPartitions":
        """Those of the instance of `DAGSTER_HOME` (`close` it)."""
        from scrapeflow_dagster.instance import get_instance

        return cls(get_instance())

    def add(self, keys: Sequence[str]) -> int:
        """Add the new ones of `keys`; returns how many."""
        new = [k for k in dict.fromkeys(keys) if k not in self._existing]
        for start in range(0, len(new), ADD_CHUNK_KEYS):
            chunk = new[start : start + ADD_CHUNK_KEYS]
            self.instance.add_dynamic_partitions(TASKS_PARTITIONS_NAME, chunk)
        self._existing.update(new)
        return len(new)

    def close(self) -> None:
        """Let go of the instance."""
        self.instance.dispose()


def add_new_task_partitions(instance: dg.DagsterInstance, keys: Sequence[str]) -> None:
    """Add `keys`, new tasks (a discovery's), as `tasks` partitions in chunks, without reading
    every partition first (`add_task_partitions`): Dagster skips any that exists."""
    for start in range(0, len(keys), ADD_CHUNK_KEYS):
        instance.add_dynamic_partitions(TASKS_PARTITIONS_NAME, keys[start : start + ADD_CHUNK_KEYS])
