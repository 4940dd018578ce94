"""`BatchedSqliteEventLogStorage` in this process, on real SQLite files: when it writes, and
that it writes the same rows as Dagster's own `SqliteEventLogStorage` fed the same events."""

import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import sqlalchemy as sa
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

from scrapeflow_dagster.storage.batches.write import opens_transaction_before_insert
from scrapeflow_dagster.storage.dagster_internals import version_guard
from scrapeflow_dagster.storage.planned import rows as planned_module
from scrapeflow_dagster.storage.sqlite.event_log import BatchedSqliteEventLogStorage
from scrapeflow_dagster_tests.storage.events import (
    ODD_KEYS,
    OTHER_RUN,
    RUN,
    STOCK_ROWS,
    log_line,
    materialized,
    observed,
    planned,
    store_planned_both_ways,
    two_runs,
)
from scrapeflow_dagster_tests.storage.homes import REPO_ROOT, instance_of, write_home
from scrapeflow_dagster_tests.storage.snapshot import schema


@pytest.fixture
def storage(tmp_path: Path) -> Iterator[BatchedSqliteEventLogStorage]:
    batched = BatchedSqliteEventLogStorage(str(tmp_path / "runs"), max_buffered_events=4)
    yield batched
    batched.dispose()


def shard_rows(base_dir: Path, shard: str, columns: str = "dagster_event_type, partition"):
    """Rows of a shard's event_logs in id order, read with plain sqlite3 (no flush)."""
    path = base_dir / f"{shard}.db"
    if not path.exists():
        return []
    with sqlite3.connect(path) as db:
        return db.execute(f"SELECT {columns} FROM event_logs ORDER BY id").fetchall()


def table_dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the tables asset events touch (asset_keys without its creation time)."""
    with sqlite3.connect(path) as db:
        return {
            "event_logs": db.execute("SELECT * FROM event_logs ORDER BY id").fetchall(),
            "asset_event_tags": db.execute("SELECT * FROM asset_event_tags ORDER BY id").fetchall(),
            "asset_keys": db.execute(
                "SELECT id, asset_key, last_materialization, last_run_id, asset_details,"
                " wipe_timestamp, last_materialization_timestamp, tags, cached_status_data"
                " FROM asset_keys ORDER BY id"
            ).fetchall(),
        }


def test_the_same_events_give_the_same_rows_as_stock_dagster(tmp_path: Path) -> None:
    stock = SqliteEventLogStorage(str(tmp_path / "stock"))
    batched = BatchedSqliteEventLogStorage(
        str(tmp_path / "batched"), max_buffered_events=3, lean_writes=STOCK_ROWS
    )
    events = two_runs()
    for event in events[:8]:
        stock.store_event(event)
        batched.store_event(event)
    stock.store_event_batch(events[8:])
    batched.store_event_batch(events[8:])
    batched.dispose()
    stock.dispose()
    for shard in ("index", RUN, OTHER_RUN, ""):
        assert table_dump(tmp_path / "batched" / f"{shard}.db") == table_dump(
            tmp_path / "stock" / f"{shard}.db"
        ), shard


def test_rows_that_do_not_get_consecutive_ids_are_inserted_one_by_one(tmp_path: Path) -> None:
    # A batch is inserted in one statement, its ids read as consecutive; a trigger that adds a
    # row after some inserts breaks that, and then the batch is inserted row by row, with
    # the ids stock Dagster's inserts get (the filler rows between them).
    stock = SqliteEventLogStorage(str(tmp_path / "stock"))
    batched = BatchedSqliteEventLogStorage(
        str(tmp_path / "batched"), max_buffered_events=100, lean_writes=STOCK_ROWS
    )
    events = two_runs()
    for storage, folder in ((stock, "stock"), (batched, "batched")):
        storage.store_event(log_line(RUN))  # makes the index shard
        with sqlite3.connect(tmp_path / folder / "index.db") as db:
            db.execute(
                "CREATE TRIGGER filler AFTER INSERT ON event_logs"
                " WHEN NEW.partition = 'p3' AND NEW.dagster_event_type = 'ASSET_MATERIALIZATION'"
                " BEGIN INSERT INTO event_logs (run_id, event) VALUES ('filler', '{}'); END"
            )
        for event in events:
            storage.store_event(event)
    assert batched.buffered_event_count > 0  # the materialisation of p3 waited in a batch
    batched.dispose()
    stock.dispose()
    dumped = table_dump(tmp_path / "batched" / "index.db")
    assert ("filler",) in [row[1:2] for row in dumped["event_logs"]]
    assert dumped == table_dump(tmp_path / "stock" / "index.db")


def test_batches_count_on_the_write_lock_only_where_a_transaction_opens_before_insert(
    tmp_path: Path,
) -> None:
    # The consecutive ids hold under one transaction; in autocommit mode each insert commits
    # (and another writer could come between two), so a batch goes in row by row there.
    for isolation_level, expected in ((None, True), ("AUTOCOMMIT", False)):
        options = {"isolation_level": isolation_level} if isolation_level else {}
        engine = sa.create_engine(f"sqlite:///{tmp_path / 'lock.db'}", **options)
        with engine.connect() as conn:
            assert opens_transaction_before_insert(conn) is expected, isolation_level
        engine.dispose()


@pytest.mark.parametrize("chunk", [None, 7])
def test_a_runs_planned_partitions_come_as_one_event_and_are_stored_as_stock_stores_each(
    tmp_path: Path, chunk: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if chunk is not None:  # written a chunk of partitions per transaction
        monkeypatch.setattr(planned_module, "PLANNED_ROWS_PER_CHUNK", chunk)
    stock = SqliteEventLogStorage(str(tmp_path / "stock"))
    batched = BatchedSqliteEventLogStorage(
        str(tmp_path / "batched"), max_buffered_events=3, lean_writes=STOCK_ROWS
    )
    # Run creation asks the storage: one planned event per asset naming the run's partitions.
    each = store_planned_both_ways(stock, batched, [f"k{i}" for i in range(50)] + ODD_KEYS)
    for shard in ("index", RUN):
        assert table_dump(tmp_path / "batched" / f"{shard}.db") == table_dump(
            tmp_path / "stock" / f"{shard}.db"
        ), shard
    partitions = [row[1] for row in shard_rows(tmp_path / "batched", "index")]
    # In the index shard (a log line is only in the run's): one row per partition, in order.
    assert partitions == ["k0", *[event.dagster_event.partition for event in each]]  # type: ignore[union-attr]


def test_new_run_shards_are_the_ones_stock_dagster_makes(tmp_path: Path) -> None:
    stock = SqliteEventLogStorage(str(tmp_path / "stock"))
    batched = BatchedSqliteEventLogStorage(str(tmp_path / "batched"), lean_writes=STOCK_ROWS)
    # The first new shard is made by stock `_initdb` (the template), the next ones are copies.
    for run_id in (RUN, OTHER_RUN):
        stock.store_event(log_line(run_id))
        batched.store_event(log_line(run_id))
    # Another process made this one: it is opened, not made again.
    third = "0f1e2d3c-0000-4000-8000-000000000003"
    shutil.copyfile(tmp_path / "stock" / f"{RUN}.db", tmp_path / "batched" / f"{third}.db")
    batched.store_event(log_line(third, "in a shard made elsewhere"))
    batched.dispose()
    stock.dispose()
    for run_id in (RUN, OTHER_RUN):
        made = schema(tmp_path / "batched" / f"{run_id}.db")
        assert made == schema(tmp_path / "stock" / f"{run_id}.db"), run_id
        assert made["journal_mode"] == ("wal",) and made["revision"]
    assert len(shard_rows(tmp_path / "batched", third)) == 2
    assert [p.name for p in (tmp_path / "batched").iterdir() if p.name.endswith(".staged")] == []


def test_new_shard_templates_remove_those_of_dead_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process killed outright never runs its exit handler: the next one to make a template
    removes what such processes left, and nothing of a live one."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "temp"))
    (tmp_path / "temp").mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    left = tmp_path / "temp" / f"scrapeflow-shard-template-{dead.pid}-abc123"
    live = tmp_path / "temp" / f"scrapeflow-shard-template-{os.getppid()}-def456"
    for folder in (left, live):
        folder.mkdir()
        (folder / "template.db").write_bytes(b"")
    storage = BatchedSqliteEventLogStorage(str(tmp_path / "runs"))
    storage.store_event(log_line(RUN))  # the first new run shard: the template is made
    made = [p.name for p in (tmp_path / "temp").iterdir()]
    storage.dispose()
    assert not left.exists()
    assert live.exists()
    assert any(name.startswith(f"scrapeflow-shard-template-{os.getpid()}-") for name in made)


def test_shard_connections_keep_sqlites_temporary_files_in_memory(
    storage: BatchedSqliteEventLogStorage,
) -> None:
    # A batch's INSERT ... RETURNING would spill statement journals to /var/tmp otherwise.
    for shard in ("index", RUN):
        with storage._connect(shard) as conn:
            assert conn.exec_driver_sql("PRAGMA temp_store").scalar() == 2, shard  # MEMORY


def test_the_index_shards_wal_files_outlive_each_query_until_the_storage_is_disposed(
    tmp_path: Path,
) -> None:
    """Each query opens and closes its own connection, as stock does; an idle one kept open
    stops SQLite from checkpointing and deleting the index shard's WAL files at each close, and
    the storage's disposal closes it (the WAL checkpointed into the shard, as stock leaves it)."""
    storage = BatchedSqliteEventLogStorage(str(tmp_path / "runs"))
    storage.store_event(planned(RUN, "a", "p0"))
    storage.flush()
    wal = tmp_path / "runs" / "index.db-wal"
    made = wal.stat().st_ino
    for i in range(1, 4):
        storage.store_event(planned(RUN, "a", f"p{i}"))
        storage.flush()
        assert wal.stat().st_ino == made  # the same file, not one deleted and made again

    storage.dispose()

    assert not wal.exists()
    assert len(shard_rows(tmp_path / "runs", "index")) == 4


def test_a_forked_child_and_its_parent_both_keep_every_index_write(tmp_path: Path) -> None:
    """No idle connection crosses a fork: a child inheriting one would take no lock of its own
    on the index shard, and the parent's close would then checkpoint and delete the WAL under
    the child's writes (measured: a child's `disk I/O error`, 152 of 300 rows kept)."""
    storage = BatchedSqliteEventLogStorage(str(tmp_path / "runs"))
    storage.store_event(planned(RUN, "a", "p0"))
    storage.flush()
    child_wrote_one, parent_closed = os.pipe(), os.pipe()
    writes = 60
    pid = os.fork()
    if pid == 0:  # the child writes on while the parent closes everything it held
        code = 1
        try:
            storage.store_event(planned(RUN, "a", "c0"))
            storage.flush()
            os.write(child_wrote_one[1], b"1")
            os.read(parent_closed[0], 1)
            for i in range(1, writes):
                storage.store_event(planned(RUN, "a", f"c{i}"))
                storage.flush()
            code = 0
        finally:
            os._exit(code)
    os.read(child_wrote_one[0], 1)
    storage.dispose()
    again = BatchedSqliteEventLogStorage(str(tmp_path / "runs"))
    os.write(parent_closed[1], b"1")
    for i in range(1, writes):
        again.store_event(planned(RUN, "a", f"q{i}"))
        again.flush()
    _, status = os.waitpid(pid, 0)
    again.dispose()
    assert os.waitstatus_to_exitcode(status) == 0
    with sqlite3.connect(tmp_path / "runs" / "index.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert len(shard_rows(tmp_path / "runs", "index")) == 2 * writes


def test_each_write_to_a_run_shard_reaches_its_db_file_for_the_webservers_watch(
    tmp_path: Path,
) -> None:
    """The webserver streams a run's events by watching `<run>.db` (Dagster's
    `SqliteEventLogStorageWatchdog`): each write must reach that file, not wait in the WAL."""
    storage = BatchedSqliteEventLogStorage(str(tmp_path / "runs"))
    shard = tmp_path / "runs" / f"{RUN}.db"
    storage.store_event(log_line(RUN))
    for i in range(3):
        before = shard.read_bytes()
        storage.store_event(materialized(RUN, "a", f"p{i}"))
        storage.store_event(log_line(RUN, f"line {i}"))  # writes the waiting batch, then itself
        assert shard.read_bytes() != before, i
    storage.dispose()


def test_asset_events_wait_for_the_next_other_event_and_keep_their_order(
    storage: BatchedSqliteEventLogStorage, tmp_path: Path
) -> None:
    # A failed partition's observation waits with them (a run logs one per failed task).
    for event in (
        materialized(RUN, "a", "p0"),
        observed(RUN, "a", "p1"),
        materialized(RUN, "a", "p2"),
    ):
        storage.store_event(event)
    assert storage.buffered_event_count == 3
    assert shard_rows(tmp_path / "runs", RUN) == []

    storage.store_event(log_line(RUN))

    assert storage.buffered_event_count == 0
    assert shard_rows(tmp_path / "runs", RUN) == [
        ("ASSET_MATERIALIZATION", "p0"),
        ("ASSET_OBSERVATION", "p1"),
        ("ASSET_MATERIALIZATION", "p2"),
        (None, None),
    ]


def test_a_full_buffer_is_written(storage: BatchedSqliteEventLogStorage, tmp_path: Path) -> None:
    for i in range(10):
        storage.store_event(planned(RUN, "a", f"p{i}"))
    assert storage.buffered_event_count == 2
    assert len(shard_rows(tmp_path / "runs", "index")) == 8


def test_an_old_buffer_is_written_when_the_next_event_comes(tmp_path: Path) -> None:
    storage = BatchedSqliteEventLogStorage(str(tmp_path / "runs"), max_buffer_seconds=0.0)
    storage.store_event(planned(RUN, "a", "p0"))
    storage.store_event(planned(RUN, "a", "p1"))
    assert storage.buffered_event_count == 0
    assert len(shard_rows(tmp_path / "runs", RUN)) == 2
    storage.dispose()


def test_reads_see_the_buffered_events(storage: BatchedSqliteEventLogStorage) -> None:
    for i in range(3):
        storage.store_event(materialized(RUN, "a", f"p{i}"))
    found = storage.fetch_materializations(dg.AssetKey("a"), limit=10).records
    assert [record.partition_key for record in found] == ["p2", "p1", "p0"]
    assert storage.buffered_event_count == 0


def test_partitions_added_while_events_wait_leave_them_buffered(
    storage: BatchedSqliteEventLogStorage, tmp_path: Path
) -> None:
    # A crawl streamed through one run adds partitions every few pages: no flush for each.
    for i in range(3):
        storage.store_event(materialized(RUN, "a", f"p{i}"))
    storage.add_dynamic_partitions("tasks", ["p3", "p4"])
    assert storage.buffered_event_count == 3
    assert shard_rows(tmp_path / "runs", RUN) == []
    assert storage.get_dynamic_partitions("tasks") == ["p3", "p4"]  # a read: written now
    assert storage.buffered_event_count == 0
    assert len(shard_rows(tmp_path / "runs", RUN)) == 3


def test_a_batch_is_written_before_store_event_batch_returns(
    storage: BatchedSqliteEventLogStorage, tmp_path: Path
) -> None:
    storage.store_event(planned(RUN, "a", "p0"))
    storage.store_event_batch([planned(RUN, "a", "p1"), planned(RUN, "b", "p1")])
    assert storage.buffered_event_count == 0
    assert [row[1] for row in shard_rows(tmp_path / "runs", "index")] == ["p0", "p1", "p1"]


def test_runless_materialisations_are_not_buffered(
    storage: BatchedSqliteEventLogStorage,
) -> None:
    storage.store_event(materialized("", "a", "p0"))
    assert storage.buffered_event_count == 0


def test_runless_planned_events_are_buffered_and_written_in_order(
    storage: BatchedSqliteEventLogStorage, tmp_path: Path
) -> None:
    # The executor assets write one per task a failing run could not attempt.
    storage.store_event_batch([planned("", "a", "p0"), planned("", "a", "p1")])
    storage.store_event(planned("", "a", "p2"))
    assert storage.buffered_event_count == 1
    storage.flush()
    assert [row[1] for row in shard_rows(tmp_path / "runs", "index")] == ["p0", "p1", "p2"]


def test_the_buffer_is_written_at_exit(tmp_path: Path) -> None:
    script = (
        "from scrapeflow_dagster.storage.sqlite.event_log import BatchedSqliteEventLogStorage\n"
        "from scrapeflow_dagster_tests.storage.events import planned\n"
        f"storage = BatchedSqliteEventLogStorage({str(tmp_path / 'runs')!r})\n"
        f"storage.store_event(planned({RUN!r}, 'a', 'p0'))\n"
        "assert storage.buffered_event_count == 1\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=120)
    assert shard_rows(tmp_path / "runs", RUN) == [("ASSET_MATERIALIZATION_PLANNED", "p0")]


def test_a_forked_child_does_not_write_its_parents_buffer(
    storage: BatchedSqliteEventLogStorage, tmp_path: Path
) -> None:
    storage.store_event(planned(RUN, "a", "p0"))
    pid = os.fork()
    if pid == 0:  # the child: exits without Python's cleanup, as multiprocessing's fork does
        os._exit(0 if storage.buffered_event_count == 0 else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert storage.buffered_event_count == 1
    storage.flush()
    assert len(shard_rows(tmp_path / "runs", RUN)) == 1


def test_dagster_yaml_configures_it_for_every_process(tmp_path: Path) -> None:
    home = write_home(
        tmp_path / "home",
        batched=True,
        options={"max_buffered_events": 7, "max_buffer_seconds": 0.5},
    )
    with instance_of(home) as instance:
        storage = instance.event_log_storage
        assert isinstance(storage, BatchedSqliteEventLogStorage)
        config = storage.inst_data.config_dict if storage.inst_data else {}
        assert config["max_buffered_events"] == 7
        # Step and run processes rebuild the instance from its ref.
        with dg.DagsterInstance.from_ref(instance.get_ref()) as rebuilt:
            assert isinstance(rebuilt.event_log_storage, BatchedSqliteEventLogStorage)
            assert rebuilt.event_log_storage.inst_data == storage.inst_data


@pytest.mark.parametrize("version", ["1.13.26", "1.14.0", "1.13.27rc1", "1!0+dev"])
def test_another_dagster_version_is_refused_with_one_warning(version: str) -> None:
    with pytest.warns(RuntimeWarning, match=re.escape(f"this is dagster {version}:")):
        assert not version_guard.supports_dagster_version(version)
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        assert not version_guard.supports_dagster_version(version)
    assert again == []


@pytest.mark.parametrize("version", version_guard.VERIFIED["dagster"])
def test_each_verified_version_is_accepted(version: str) -> None:
    assert version_guard.supports_dagster_version(version)


def test_make_compat_admits_the_installed_version_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(version_guard.ADMIT_INSTALLED_ENV, "1")
    assert version_guard.supports_dagster_version(dg.__version__)
    # Another version is still refused (one the refusal test above has not warned about).
    with pytest.warns(RuntimeWarning, match=re.escape("this is dagster 1.14.1:")):
        assert not version_guard.supports_dagster_version("1.14.1")
