"""The batched storages' copy of dynamic partition keys
(`storage/dagster_internals/partition_keys.py`): every read equals the stock storage's read of
the table, through each way the keys can change, whichever process changed them; an unchanged
table is not read again."""

from pathlib import Path

import pytest
from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage

from scrapeflow_dagster_tests.storage.homes import instance_of, require_postgres_extra
from scrapeflow_dagster_tests.storage.retention_homes import write_chain_home

NAME = "tasks"


def _stock(storage: object) -> list[str]:
    """The keys as the stock storage reads them (the table, in id order)."""
    return list(SqlEventLogStorage.get_dynamic_partitions(storage, NAME))  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_read_of_the_keys_is_the_tables_whatever_changed_them(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = None
    if backend == "postgres":
        require_postgres_extra()
        url = request.getfixturevalue("postgres").database("partition_keys")
    home = write_chain_home(tmp_path / "home", postgres_url=url)
    with instance_of(home) as reader, instance_of(home) as writer:
        # `writer` stands for another process: `reader` learns of its changes from the table.
        storage = reader.event_log_storage
        assert storage.get_dynamic_partitions(NAME) == []
        steps = [
            lambda: writer.add_dynamic_partitions(NAME, ["task-a", "task-b", "task-c"]),
            lambda: writer.add_dynamic_partitions(NAME, ["task-d"]),
            # The newest key replaced between two reads: the same count, and on SQLite the
            # same newest id (d's goes to e).
            lambda: (
                writer.delete_dynamic_partition(NAME, "task-d"),
                writer.add_dynamic_partitions(NAME, ["task-e"]),
            ),
            lambda: (  # the same count, a new newest id
                writer.delete_dynamic_partition(NAME, "task-b"),
                writer.add_dynamic_partitions(NAME, ["task-b"]),
            ),
            lambda: reader.add_dynamic_partitions(NAME, ["task-f"]),  # this process
            lambda: (  # the same key back
                writer.delete_dynamic_partition(NAME, "task-f"),
                writer.add_dynamic_partitions(NAME, ["task-f"]),
            ),
        ]
        for step in steps:
            step()
            keys = storage.get_dynamic_partitions(NAME)
            assert keys == _stock(storage)
        assert keys == [f"task-{x}" for x in "acebf"]

        # A caller's list is its own.
        keys.append("mine")
        assert storage.get_dynamic_partitions(NAME) == [f"task-{x}" for x in "acebf"]

        # Unchanged, the table's keys are not read again (the copy is handed out).
        first = storage.get_dynamic_partitions(NAME)
        second = storage.get_dynamic_partitions(NAME)
        assert all(x is y for x, y in zip(first, second, strict=True))
        writer.add_dynamic_partitions(NAME, ["task-g"])
        third = storage.get_dynamic_partitions(NAME)
        assert third[-1] == "task-g" and third[0] is not first[0]
