"""Open-ledger markers: kept from a Ledger's creation to its close, moved at each flush to the
start of the batch before, and told apart as live, dead or of another host."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import orjson

from scrapeflow_dagster.engine.history import Ledger, TaskRow
from scrapeflow_dagster.engine.history.markers.names import open_dir, process_start_ticks
from scrapeflow_dagster.engine.history.markers.open_markers import (
    read_markers,
    sweep_orphan_journals,
)
from scrapeflow_dagster_tests.engine.history.helpers import step


def test_a_marker_lives_from_creation_to_close_and_trails_one_batch(db_path: Path) -> None:
    before = time.time()
    ledger = Ledger(db_path, batch_rows=2)
    [created] = read_markers(ledger.spool_dir)
    assert before <= created.since <= time.time() and created.pid == os.getpid()
    assert not created.is_dead() and not created.elsewhere

    ledger.record_step(step("a", 0))
    ledger.record_step(step("b", 0))  # the first batch is spooled
    assert [m.since for m in read_markers(ledger.spool_dir)] == [created.since]
    first_flush = time.time()
    ledger.record_step(step("c", 0))
    ledger.record_step(step("d", 0))  # the second: the marker moves to the first's end
    [moved] = read_markers(ledger.spool_dir)
    assert created.since < moved.since <= first_flush

    ledger.record_step(step("e", 0))
    ledger.close(sync=False)
    assert read_markers(ledger.spool_dir) == []  # everything is in the spool
    ledger.record_task(TaskRow("t", "https://a.test/"))
    assert read_markers(ledger.spool_dir) == []  # a task row needs none
    ledger.record_step(step("f", 0))  # a step recorded after close: marked again
    assert len(read_markers(ledger.spool_dir)) == 1
    ledger.close(sync=False)
    assert list(open_dir(ledger.spool_dir).iterdir()) == []  # no temp file left either


def test_a_ledger_without_a_marker_makes_one_for_its_first_step(db_path: Path) -> None:
    ledger = Ledger(db_path, keep_marker=False)
    ledger.record_task(TaskRow("t", "https://a.test/"))
    ledger.flush()
    assert read_markers(ledger.spool_dir) == []
    ledger.record_step(step("a", 0))
    assert len(read_markers(ledger.spool_dir)) == 1
    ledger.close(sync=False)
    assert read_markers(ledger.spool_dir) == []


def test_markers_of_gone_processes_are_dead_those_of_other_hosts_are_not(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], text=True,
                          capture_output=True, check=True)  # fmt: skip
    folder = open_dir(tmp_path)
    folder.mkdir(parents=True)
    me = os.getpid()
    written = {
        "gone": {"pid": int(gone.stdout), "host": socket.gethostname(), "since": 1.0},
        "reused": {"pid": me, "host": socket.gethostname(), "started": -1, "since": 2.0},
        "mine": {
            "pid": me,
            "host": socket.gethostname(),
            "started": process_start_ticks(me),
            "since": 3.0,
        },  # fmt: skip
        "elsewhere": {"pid": int(gone.stdout), "host": "another-host", "since": 4.0},
    }
    for name, data in written.items():
        (folder / f"{name}.json").write_bytes(orjson.dumps(data))
    (folder / ".gone.json.123.0.tmp").write_text("{")  # a temp file: not a marker

    found = {m.path.stem: m for m in read_markers(tmp_path)}

    assert sorted(found) == ["elsewhere", "gone", "mine", "reused"]
    assert {name: m.is_dead() for name, m in found.items()} == {
        "gone": True,
        "reused": True,  # the pid runs, but it is a later process
        "mine": False,
        "elsewhere": False,  # cannot be checked from here
    }
    assert found["elsewhere"].elsewhere and found["mine"].since == 3.0


def test_a_journal_names_the_keys_of_its_batch_and_the_one_before(db_path: Path) -> None:
    ledger = Ledger(db_path, batch_rows=2, journal=True)
    [created] = read_markers(ledger.spool_dir)
    assert created.keys == frozenset()
    for key in ("a", 'we"ird,\nkey'):
        ledger.announce(key)
        ledger.record_step(step(key, 0))  # the second fills the batch: spooled
    ledger.announce("c")
    assert read_markers(ledger.spool_dir)[0].keys == {"a", 'we"ird,\nkey', "c"}

    ledger.record_step(step("c", 0))
    ledger.announce("d")
    ledger.record_step(step("d", 0))  # the second batch spooled: the first's keys go
    ledger.announce("e")
    assert read_markers(ledger.spool_dir)[0].keys == {"c", "d", "e"}
    assert len(list(open_dir(ledger.spool_dir).glob("*.keys"))) == 2

    ledger.record_step(step("e", 0))
    ledger.close(sync=False)
    assert list(open_dir(ledger.spool_dir).iterdir()) == []  # marker and journal files
    ledger.announce("f")  # a run going on after close: marked and journaled again
    assert read_markers(ledger.spool_dir)[0].keys == {"f"}
    ledger.record_step(step("f", 0))
    ledger.close(sync=False)
    assert list(open_dir(ledger.spool_dir).iterdir()) == []


def test_a_ledger_without_a_journal_ignores_announcements(db_path: Path) -> None:
    ledger = Ledger(db_path)
    ledger.announce("a")
    [marker] = read_markers(ledger.spool_dir)
    assert marker.keys is None  # taken by its time
    assert [p.suffix for p in open_dir(ledger.spool_dir).iterdir()] == [".json"]
    ledger.close(sync=False)


def test_a_journal_read_mid_write_gone_or_misnamed_is_read_safely(tmp_path: Path) -> None:
    folder = open_dir(tmp_path)
    folder.mkdir(parents=True)
    me = {"pid": os.getpid(), "host": socket.gethostname(), "since": 1.0}
    (folder / "m-0.keys").write_bytes(b'"a"\n"b"\n"c-being-wri')  # a line still being written
    (folder / "m.json").write_bytes(orjson.dumps({**me, "journal": ["gone.keys", "m-0.keys"]}))
    (folder / "bad.json").write_bytes(orjson.dumps({**me, "journal": ["../m-0.keys"]}))

    found = {m.path.stem: m for m in read_markers(tmp_path)}

    assert found["m"].keys == {"a", "b"}  # the removed oldest file read as empty
    assert found["bad"].keys is None  # a journal it cannot have: taken by its time


def test_a_journal_that_cannot_be_written_leaves_a_marker_taken_by_time(db_path: Path) -> None:
    ledger = Ledger(db_path, journal=True)
    ledger.announce("a")
    ledger.record_step(step("a", 0))
    fd = ledger._marker._fd
    assert fd is not None
    full = os.open("/dev/full", os.O_WRONLY)  # every write: ENOSPC, as a full disk
    os.dup2(full, fd)
    os.close(full)

    ledger.announce("b")  # logged, not raised: the status file may still be written

    [marker] = read_markers(ledger.spool_dir)
    assert marker.keys is None  # taken by its time from now on
    assert [p.suffix for p in open_dir(ledger.spool_dir).iterdir()] == [".json"]
    ledger.record_step(step("b", 0))
    ledger.close(sync=False)
    assert list(open_dir(ledger.spool_dir).iterdir()) == []


def test_a_key_named_after_the_last_flush_keeps_the_marker_through_close(db_path: Path) -> None:
    ledger = Ledger(db_path, journal=True)
    ledger.record_step(step("a", 0))
    ledger.announce("b")  # its file written, its row still to come (another thread)

    ledger.close(sync=False)

    [marker] = read_markers(ledger.spool_dir)
    assert marker.keys == {"b"}  # a reader still reads b's file
    ledger.record_step(step("b", 0))
    ledger.close(sync=False)
    assert list(open_dir(ledger.spool_dir).iterdir()) == []


def test_journals_left_by_killed_processes_are_swept_live_ones_kept(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], text=True,
                          capture_output=True, check=True)  # fmt: skip
    folder = open_dir(tmp_path)
    folder.mkdir(parents=True)
    orphan = folder / f"{int(gone.stdout)}-abc.3.keys"  # its marker removed, then killed
    opening = folder / f"{os.getpid()}-def.0.keys"  # a live Ledger about to list it
    listed = folder / f"{int(gone.stdout)}-ghi.0.keys"  # a dead marker's: repair removes it
    for path in (orphan, opening, listed):
        path.write_bytes(b'"k"\n')
    (folder / f"{int(gone.stdout)}-ghi.json").write_bytes(b"{}")

    assert sweep_orphan_journals(tmp_path) == 1

    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [opening.name, listed.name, f"{int(gone.stdout)}-ghi.json"]
    )
