"""`current_state` as a table kept up as rows are ingested: it always equals the latest
non-SKIPPED run per (key, executor) over the whole history, through syncs, rebuilds, files of
an earlier version, and rows another version or a user added or removed."""

import dataclasses
import random
from pathlib import Path

import duckdb

from scrapeflow_dagster.engine.history import Ledger, StepRow, rebuild_from_status_dir
from scrapeflow_dagster.engine.history.recording.sync import sync_spool
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster_tests.engine.history.helpers import query, step
from scrapeflow_dagster_tests.engine.history.status_helpers import Step, play_step
from scrapeflow_dagster_tests.support.tasks import add_task_file

# The latest run per (key, executor) over every step row: what `current_state` always was.
FROM_HISTORY = """
SELECT * FROM step_runs WHERE status <> 'SKIPPED'
QUALIFY row_number() OVER (
    PARTITION BY key, executor ORDER BY ended_at DESC NULLS LAST, seq DESC) = 1
"""
# How an earlier version defined the view (no `step_current` in its files).
EARLIER_VIEW = f"CREATE OR REPLACE VIEW current_state AS {FROM_HISTORY}"


def current(db_path: Path) -> list[tuple[object, ...]]:
    return query(db_path, "SELECT * FROM current_state ORDER BY key, executor")


def from_history(db_path: Path) -> list[tuple[object, ...]]:
    return query(db_path, f"SELECT * FROM ({FROM_HISTORY}) ORDER BY key, executor")


def random_rows(rng: random.Random, count: int) -> list[StepRow]:
    """Step rows over few keys and executors: ties of end time, no end time, SKIPPED."""
    rows = []
    for _ in range(count):
        status = rng.choice(["SUCCESS", "ERROR", "SKIPPED"])
        row = step(f"k{rng.randrange(12)}", rng.randrange(6), status, md5=str(rng.random()))
        executor = rng.choice(["scrape", "validation"])
        ended = None if rng.random() < 0.1 else row.ended_at
        rows.append(dataclasses.replace(row, executor=executor, ended_at=ended))
    return rows


def test_the_table_equals_the_history_s_latest_after_every_sync(db_path: Path) -> None:
    rng = random.Random(7)
    for batch in range(8):  # eight runs, each its own syncs
        with Ledger(db_path, batch_rows=rng.randrange(1, 9)) as ledger:
            for row in random_rows(rng, rng.randrange(1, 30)):
                ledger.record_step(row)
        assert current(db_path) == from_history(db_path), batch
    assert len(current(db_path)) > 12  # several executors per key: not a trivial table


def test_an_earlier_version_s_file_is_filled_from_its_history_then_kept(db_path: Path) -> None:
    with Ledger(db_path, batch_rows=5) as ledger:
        for row in random_rows(random.Random(1), 40):
            ledger.record_step(row)
    with duckdb.connect(str(db_path)) as conn:  # as an earlier version left it
        conn.execute("DROP TABLE step_current; DROP TABLE step_current_upto")
        conn.execute(EARLIER_VIEW)

    with Ledger(db_path) as ledger:
        ledger.record_step(step("k1", 9))

    assert current(db_path) == from_history(db_path)
    assert query(db_path, "SELECT count(*) FROM step_current") == [(len(current(db_path)),)]


def test_rows_appended_by_another_version_or_removed_by_hand_are_caught_up(
    db_path: Path,
) -> None:
    with Ledger(db_path) as ledger:
        for row in random_rows(random.Random(2), 30):
            ledger.record_step(row)
    with duckdb.connect(str(db_path)) as conn:  # an earlier version's sync: the view, rows
        conn.execute(EARLIER_VIEW)
        conn.execute(
            "INSERT INTO step_runs (key, executor, status, ended_at)"
            " VALUES ('k1', 'scrape', 'ERROR', TIMESTAMP '2030-01-01')"
        )
    sync_spool(db_path, db_path.parent / "ledger-spool")  # nothing to ingest: opens, catches up
    assert current(db_path) == from_history(db_path)
    assert ("k1", "scrape", "ERROR") in {row[:3] for row in current(db_path)}

    with duckdb.connect(str(db_path)) as conn:  # a user deleting rows
        conn.execute("DELETE FROM step_runs WHERE ended_at >= TIMESTAMP '2030-01-01'")
    sync_spool(db_path, db_path.parent / "ledger-spool")
    assert current(db_path) == from_history(db_path)


def scraped_tasks(tmp_path: Path, count: int) -> DataLayout:
    """A data folder whose `count` tasks `t0`... each had a successful scrape, synced."""
    layout = DataLayout(tmp_path / "data").ensure()
    add_task_file(layout, [f"t{n},http://127.0.0.1:9/{n}" for n in range(count)])
    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        for n in range(count):
            play_step(layout, ledger, Step(f"t{n}"))
    return layout


def test_a_rebuild_from_status_files_keeps_the_table(tmp_path: Path) -> None:
    layout = scraped_tasks(tmp_path, 6)
    with Ledger(layout.db_path, spool_dir=layout.spool_dir, keep_marker=False) as ledger:
        play_step(layout, ledger, Step("t0", error_class="TimeoutError", message="late"))
        ledger.flush()
        for path in layout.spool_dir.glob("*.jsonl"):
            path.unlink()  # lost: the rebuild finds t0's error in its file

    rebuild_from_status_dir(layout.status_dir, layout.db_path)

    assert current(layout.db_path) == from_history(layout.db_path)
    errors = query(layout.db_path, "SELECT key FROM current_state WHERE status = 'ERROR'")
    assert errors == [("t0",)]


def test_a_column_added_to_step_runs_or_a_dropped_table_makes_it_anew(db_path: Path) -> None:
    with Ledger(db_path) as ledger:
        for row in random_rows(random.Random(3), 30):
            ledger.record_step(row)
    with duckdb.connect(str(db_path)) as conn:  # a later version's column, then more rows
        conn.execute("ALTER TABLE step_runs ADD COLUMN worker VARCHAR")
    with Ledger(db_path) as ledger:
        ledger.record_step(step("k2", 8))
    assert current(db_path) == from_history(db_path)
    columns = query(
        db_path, "SELECT column_name FROM duckdb_columns() WHERE table_name = 'step_current'"
    )
    assert ("worker",) in columns

    with duckdb.connect(str(db_path)) as conn:  # a user dropping the table
        conn.execute("DROP VIEW current_state; DROP TABLE step_current")
    sync_spool(db_path, db_path.parent / "ledger-spool")
    assert current(db_path) == from_history(db_path) and current(db_path)


def test_db_rebuild_ranks_the_whole_history_again(tmp_path: Path) -> None:
    layout = scraped_tasks(tmp_path, 4)
    with duckdb.connect(str(layout.db_path)) as conn:  # a row edited in place, by hand
        conn.execute("UPDATE step_runs SET status = 'SKIPPED' WHERE key = 't1'")
    assert current(layout.db_path) != from_history(layout.db_path)  # append-only: not seen

    rebuild_from_status_dir(layout.status_dir, layout.db_path)

    assert current(layout.db_path) == from_history(layout.db_path)
    assert ("t1", "scrape", "SUCCESS") in {row[:3] for row in current(layout.db_path)}
