"""`BatchedSqliteEventLogStorage` in this process, on real SQLite files: that it writes the
same rows as Dagster's own `SqliteEventLogStorage` fed the same events, and the shard files
it makes and keeps (templates, temporary files, WAL, forks, the webserver's watch)."""

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import sqlalchemy as sa
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

from scrapeflow_dagster.storage.batches.write import opens_transaction_before_insert
from scrapeflow_dagster.storage.planned import rows as planned_module
from scrapeflow_dagster.storage.sqlite.event_log import BatchedSqliteEventLogStorage
from scrapeflow_dagster_tests.storage.events import (
    ODD_KEYS,
    OTHER_RUN,
    RUN,
    STOCK_ROWS,
    log_line,
    materialized,
    planned,
    store_planned_both_ways,
    two_runs,
)
from scrapeflow_dagster_tests.storage.snapshot import schema
from scrapeflow_dagster_tests.storage.sqlite_shards import shard_rows, table_dump


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
