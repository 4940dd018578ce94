"""`status_counts`: DuckDB's counts plus the status files it lags behind equal what every status
file says, after a run, while a run holds rows unspooled, after one was SIGKILLed (then DuckDB
is repaired and the marker gone), and while another process holds DuckDB."""

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.history import Ledger, count_statuses, rebuild_from_status_dir
from scrapeflow_dagster.engine.history.markers.names import open_dir
from scrapeflow_dagster.engine.history.markers.open_markers import read_markers
from scrapeflow_dagster.engine.history.recording.sync import sync_spool
from scrapeflow_dagster.engine.run.execute import execute_async
from scrapeflow_dagster.engine.run.step import run_step
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.state.files import load_status
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.schema import has_run, is_success
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.engine.history.helpers import query, release
from scrapeflow_dagster_tests.engine.history.status_helpers import (
    Step,
    duckdb_alone,
    play_step,
    reference,
    start_child,
)
from scrapeflow_dagster_tests.support.tasks import add_task_file

Holder = Callable[[Path, str], subprocess.Popen[str]]


def stored(tmp_path: Path, count: int, *, url: str = "http://127.0.0.1:9/p") -> DataLayout:
    """A data folder with `count` tasks `t00`... stored as users store them."""
    layout = DataLayout(tmp_path / "data").ensure()
    assert len(add_task_file(layout, [f"t{n:02d},{url}/{n}" for n in range(count)])) == count
    return layout


def ran_once(tmp_path: Path, count: int) -> DataLayout:
    """`stored`, then every task's scrape succeeded in a run that ended a minute ago (its rows
    in DuckDB, its files older than any marker's margin)."""
    layout = stored(tmp_path, count)
    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        for n in range(count):
            play_step(layout, ledger, Step(f"t{n:02d}"))
    a_minute_ago = time.time() - 60
    for path in layout.status_dir.glob("*.status.json"):
        os.utime(path, (a_minute_ago, a_minute_ago))
    return layout


def flips(keys: range) -> list[Step]:
    """Steps that change what the first run left: errors of several kinds, a second executor."""
    steps = []
    for n in keys:
        key = f"t{n:02d}"
        if n % 3 == 0:
            steps.append(Step(key, "scrape", "HttpStatusError", f"HTTP response 404 for /{n}"))
        elif n % 3 == 1:
            steps.append(Step(key, "scrape", "TimeoutError", "timed out after 5 s"))
        else:
            steps.append(Step(key, "validation"))
    return steps


def markers_left(layout: DataLayout) -> list[Path]:
    return sorted(open_dir(layout.spool_dir).glob("*.json"))


async def test_after_a_run_duckdb_alone_answers_exactly(site: LocalSite, tmp_path: Path) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    rows = [f"p{n},{site.url(f'/page/{n}')}" for n in range(12)]
    rows += [f"gone{n},{site.url('/status/404')}" for n in range(3)]
    rows += ["broken," + site.url("/page/99")]
    keys = add_task_file(layout, rows)
    # A task whose status file is damaged: the runner records an ERROR row and writes no file.
    (layout.status_dir / "broken.status.json").write_text('{"name": "broken", "par')
    settings = ScrapeSettings(request_timeout_seconds=5.0)
    await run_step(layout, scrape, keys, settings=settings)
    await run_step(layout, pages, keys, requires=["scrape"])

    counts = count_statuses(layout)

    assert counts.source == "duckdb" and counts.notes == ("1 unreadable status file skipped",)
    assert counts.counts == reference(layout)
    assert counts.counts["scrape"]["SUCCESS"] == 12 and counts.counts["pages"] == {"SUCCESS": 12}
    assert counts.files_read == 1  # the damaged one, which DuckDB's row names
    assert counts.stored_tasks == 16 and markers_left(layout) == []
    assert count_statuses(layout, from_files=True).counts == counts.counts


@pytest.mark.parametrize("journal", [False, True], ids=["by time", "journaled"])
def test_a_live_run_with_unflushed_rows_is_counted_from_its_files(
    tmp_path: Path, journal: bool
) -> None:
    layout = ran_once(tmp_path, 40)
    child = start_child(layout, flips(range(25)), batch_rows=10, journal=journal)
    try:  # 20 rows spooled, 5 buffered
        sync_spool(layout.db_path, layout.spool_dir)
        assert duckdb_alone(layout) != reference(layout)  # DuckDB alone misses the buffered 5

        counts = count_statuses(layout)

        assert counts.counts == reference(layout)
        assert counts.source == "duckdb" and counts.repaired_step_rows == 0
        [marker] = read_markers(layout.spool_dir)  # the live run's, left alone
        if journal:
            # The files its journal names: the buffered batch's 5 and the spooled one's before
            # them (t10-t19), not the first batch's, older than that.
            assert marker.keys == {f"t{n:02d}" for n in range(10, 25)}
            assert counts.files_read == 15
        else:
            assert marker.keys is None
            assert counts.files_read == 25  # the files changed since the run's marker
    finally:
        assert child.stdin is not None
        child.stdin.close()
        assert child.wait(timeout=30) == 0
    after = count_statuses(layout)
    assert after.counts == reference(layout) and after.files_read == 0
    assert list(open_dir(layout.spool_dir).iterdir()) == []


def test_a_run_without_a_journal_beside_a_journaled_one_makes_status_look_by_time(
    tmp_path: Path,
) -> None:
    layout = ran_once(tmp_path, 40)
    journaled = start_child(layout, flips(range(10)), batch_rows=100, journal=True)
    older = start_child(layout, flips(range(20, 30)), batch_rows=100)  # an older version's
    try:
        counts = count_statuses(layout)

        assert counts.counts == reference(layout)
        assert counts.files_read == 20  # every file changed since the older marker's time
    finally:
        for child in (journaled, older):
            assert child.stdin is not None
            child.stdin.close()
            assert child.wait(timeout=30) == 0


async def test_a_run_names_each_status_file_in_its_journal_before_writing_it(
    site: LocalSite, tmp_path: Path
) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    fast = [f"p{n}" for n in range(6)]
    keys = add_task_file(
        layout, [f"{key},{site.url(f'/page/{n}')}" for n, key in enumerate(fast)]
        + [f"slow,{site.url('/slow/60')}"]
    )  # fmt: skip
    settings = ScrapeSettings(request_timeout_seconds=120.0)
    run = asyncio.create_task(run_step(layout, scrape, keys, settings=settings))
    try:
        while not all(scraped(layout, key) for key in fast):  # the slow page still in flight
            assert not run.done(), run
            await asyncio.sleep(0.05)
        assert duckdb_alone(layout) != reference(layout)  # the run's rows are all buffered

        counts = await asyncio.to_thread(count_statuses, layout)

        assert counts.counts == reference(layout)
        assert counts.counts["scrape"]["SUCCESS"] == 6 and counts.files_read == 6
        [marker] = read_markers(layout.spool_dir)
        assert marker.keys == set(fast)
    finally:
        run.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await run
    assert markers_left(layout) == []


async def test_the_runner_names_a_status_file_before_it_writes_it(
    site: LocalSite, tmp_path: Path
) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    rows = [f"p{n},{site.url(f'/page/{n}')}" for n in range(4)]
    rows.append(f"gone,{site.url('/status/404')}")
    keys = add_task_file(layout, rows)
    seen: dict[str, bool] = {}

    def before_write(key: str) -> None:  # what the file holds when its key is named
        status = load_status(layout.status_dir, key)
        seen[key] = status is not None and has_run(status, "scrape")

    await execute_async([scrape], layout.status_dir, keys, before_write=before_write)

    assert seen == dict.fromkeys(keys, False)  # each named once, before its outcome was saved
    assert all(scraped(layout, key) for key in keys[:4]) and not scraped(layout, "gone")


def test_a_journal_of_another_host_is_not_trusted(tmp_path: Path) -> None:
    layout = ran_once(tmp_path, 40)
    child = start_child(layout, flips(range(25)), batch_rows=10, journal=True)
    try:
        [marker] = read_markers(layout.spool_dir)
        data = orjson.loads(marker.path.read_bytes())
        marker.path.write_bytes(orjson.dumps({**data, "host": "another-host"}))  # shared folder

        counts = count_statuses(layout)

        assert counts.counts == reference(layout)
        assert counts.files_read == 25  # by its time, as a marker without a journal
    finally:
        assert child.stdin is not None
        child.stdin.close()
        assert child.wait(timeout=30) == 0


def scraped(layout: DataLayout, key: str) -> bool:
    """Whether `key`'s status file holds a finished `scrape` step."""
    status = load_status(layout.status_dir, key)
    return bool(status) and is_success(status, "scrape")


@pytest.mark.parametrize("journal", [False, True], ids=["by time", "journaled"])
def test_after_a_sigkill_the_lost_rows_are_repaired_and_the_marker_removed(
    tmp_path: Path, journal: bool
) -> None:
    layout = ran_once(tmp_path, 40)
    child = start_child(layout, flips(range(25)), batch_rows=10, journal=journal)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    assert len(markers_left(layout)) == 1

    counts = count_statuses(layout)

    assert counts.counts == reference(layout)
    assert counts.repaired_step_rows == 5  # the buffered rows; the spooled 20 were synced
    assert list(open_dir(layout.spool_dir).iterdir()) == []  # its journal files too
    assert duckdb_alone(layout) == reference(layout)  # DuckDB itself agrees again
    again = count_statuses(layout)
    assert again.counts == reference(layout) and again.files_read == 0
    assert again.repaired_step_rows == 0


def test_a_dead_run_is_repaired_only_where_no_live_run_may_still_record(tmp_path: Path) -> None:
    layout = ran_once(tmp_path, 40)
    live = start_child(layout, flips(range(20, 30)), batch_rows=100)  # all 10 buffered
    dead = start_child(layout, flips(range(10)), batch_rows=100)
    os.kill(dead.pid, signal.SIGKILL)
    dead.wait(timeout=30)
    try:
        first = count_statuses(layout)

        assert first.counts == reference(layout)
        assert len(markers_left(layout)) == 2  # the dead run's files are as new as the live's
    finally:
        assert live.stdin is not None
        live.stdin.close()
        assert live.wait(timeout=30) == 0

    second = count_statuses(layout)

    assert second.counts == reference(layout) and second.repaired_step_rows == 10
    assert markers_left(layout) == [] and duckdb_alone(layout) == reference(layout)
    # The live run's steps were recorded once, by that run: none was repaired twice.
    rows = query(layout.db_path, "SELECT count(*) FROM step_runs WHERE run_id = 'repair'")
    assert rows == [(10,)]


def test_with_duckdb_held_by_a_writer_the_files_answer(
    tmp_path: Path, hold_database: Holder
) -> None:
    layout = ran_once(tmp_path, 30)
    child = start_child(layout, flips(range(12)), batch_rows=5)
    holder = hold_database(layout.db_path, "rw")
    try:
        counts = count_statuses(layout, lock_timeout_seconds=0.3)
    finally:
        release(holder)
        assert child.stdin is not None
        child.stdin.close()
        assert child.wait(timeout=30) == 0

    assert counts.source == "status files" and counts.counts == reference(layout)
    assert "counted from the status files" in counts.notes[0]


def test_with_duckdb_open_read_only_elsewhere_the_spool_is_read_beside_it(
    tmp_path: Path, hold_database: Holder
) -> None:
    layout = ran_once(tmp_path, 30)
    child = start_child(layout, flips(range(12)), batch_rows=5)
    assert child.stdin is not None
    child.stdin.close()  # it closes its Ledger unsynced: 12 rows wait in the spool
    assert child.wait(timeout=30) == 0
    holder = hold_database(layout.db_path, "ro")
    try:
        counts = count_statuses(layout, lock_timeout_seconds=0.3)
    finally:
        release(holder)

    assert counts.source == "duckdb" and counts.counts == reference(layout)
    assert counts.files_read == 12  # the tasks of the spooled rows DuckDB has not taken in


def test_labels_agree_whether_duckdb_or_the_file_is_read(tmp_path: Path) -> None:
    messages = [
        "trailing blanks \t ",
        "e\u0301\u0301 combining marks, then a long tail " + "x" * 40,
        "via http://alice:hunter2@10.0.0.1:8080 and ?api_key=SECRET",
        "",
        "x" * 31,  # a label of exactly 48 characters
        "x" * 32,  # one more: cut
    ]
    layout = stored(tmp_path, len(messages) + 2)
    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        for n, message in enumerate(messages):
            play_step(layout, ledger, Step(f"t{n:02d}", "scrape", "SomeError", message))
    # Files of an older version, known to DuckDB only through a rebuild.
    for n, value in ((6, "ERROR no class here"), (7, "ERROR Weird::ends with a blank ")):
        path = layout.status_dir / f"t{n:02d}.status.json"
        path.write_text(path.read_text()[:-1] + f', "scrape_status": "{value}", '
                        '"scrape_last_run": "2026-11-28 08:00:00"}')  # fmt: skip
    rebuild_from_status_dir(layout.status_dir, layout.db_path)

    counts = count_statuses(layout)

    assert counts.files_read == 0 and counts.counts == reference(layout)
    assert counts.counts == count_statuses(layout, from_files=True).counts
    labels = counts.labels
    assert "ERROR SomeError::trailing blanks" in labels and "ERROR no class here" in labels
    assert "ERROR SomeError::via http://***@10.0.0.1:8080..." in labels
    assert "ERROR SomeError::" + "x" * 31 in labels
    assert "ERROR SomeError::" + "x" * 28 + "..." in labels
    assert not any("hunter2" in label or "SECRET" in label for label in labels)


def test_status_files_added_or_removed_by_hand_are_seen(tmp_path: Path) -> None:
    layout = ran_once(tmp_path, 20)
    (layout.status_dir / "t03.status.json").unlink()
    copied = (layout.status_dir / "t04.status.json").read_text().replace('"t04"', '"new"')
    (layout.status_dir / "new.status.json").write_text(copied)
    broken = copied.replace('"SUCCESS"', '"ERROR Lost::a copy of an older run"')
    (layout.status_dir / "other.status.json").write_text(broken)

    counts = count_statuses(layout)

    assert counts.counts == reference(layout)
    assert counts.counts == {"scrape": {"SUCCESS": 20, "ERROR Lost::a copy of an older run": 1}}
    assert counts.stored_tasks == 21 and counts.files_read == 2


def test_an_unreadable_marker_makes_every_file_suspect(tmp_path: Path) -> None:
    layout = ran_once(tmp_path, 10)
    open_dir(layout.spool_dir).mkdir(parents=True, exist_ok=True)
    (open_dir(layout.spool_dir) / "foreign.json").write_text("not a marker")

    counts = count_statuses(layout)

    assert counts.counts == reference(layout) and counts.files_read == 10
    assert [m.since for m in read_markers(layout.spool_dir)] == [0.0]  # never removed
