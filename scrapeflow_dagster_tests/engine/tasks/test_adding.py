"""Adding tasks: the first of conflicting duplicates is kept, and nothing stored is overwritten."""

import json
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.state.files import stored_keys
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.status import load_status, write_status
from scrapeflow_dagster.engine.tasks.adding import LIST_FOLDER_FROM, add_tasks
from scrapeflow_dagster.engine.tasks.intake import read_task_file
from scrapeflow_dagster_tests.engine.tasks.helpers import errors_by_line

# Adding tasks.


def write_jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def fillers(count: int) -> list[dict[str, object]]:
    """New tasks that make a file big enough for the folder to be listed and the status files
    created in one pass (`LIST_FOLDER_FROM`), as for a big task file."""
    return [{"url": f"http://example.com/filler/{n}", "key": f"filler-{n}"} for n in range(count)]


# Both ways `add_tasks` stores: a lookup per task, and one listing plus one creating pass.
BOTH_WAYS = pytest.mark.parametrize("filler", [0, LIST_FOLDER_FROM], ids=["lookups", "listing"])


@BOTH_WAYS
def test_add_tasks_keeps_the_first_of_conflicting_duplicates(tmp_path: Path, filler: int) -> None:
    layout = DataLayout(tmp_path / "data")
    path = write_jsonl(
        tmp_path / "tasks.jsonl",
        [
            {"url": "http://example.com/1", "key": "k"},
            {"url": "http://example.com/2", "key": "k"},
            {"url": "http://example.com/1", "key": "k"},  # the same task again: not an error
            {"url": "http://example.com/3", "key": "other"},
            {"url": "nope", "key": "bad"},
            *fillers(filler),
        ],
    )

    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        report = add_tasks(layout, read_task_file(path), ledger=ledger)

    assert report.keys == ["k", "other", *(f"filler-{n}" for n in range(filler))]
    assert report.new == 2 + filler
    assert [(e.line, e.path) for e in report.errors] == [(2, path), (5, path)]
    assert "already has different params" in report.errors[0].message
    assert f"{path}:1" in report.errors[0].message
    status = load_status(layout.status_dir, "k")
    assert status is not None
    assert status["params"] == {"url": "http://example.com/1"}
    assert not (layout.status_dir / "bad.status.json").exists()


@BOTH_WAYS
def test_add_tasks_leaves_existing_status_files_untouched(tmp_path: Path, filler: int) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    done = {
        "name": "same",
        "params": {"url": "http://example.com/same"},
        "scrape": {"size": 1},
        "scrape_status": "SUCCESS",
        "scrape_last_run": "2024-01-01 00:00:00.000001",
    }
    write_status(layout.status_dir, "same", done)
    write_status(layout.status_dir, "changed", {**done, "name": "changed"})
    (layout.status_dir / "broken.status.json").write_text('{"params": ')
    before = {p.name: p.read_bytes() for p in layout.status_dir.iterdir()}
    path = write_jsonl(
        tmp_path / "tasks.jsonl",
        [
            {"url": "http://example.com/same", "key": "same"},
            {"url": "http://example.com/new-url", "key": "changed"},
            {"url": "http://example.com/b", "key": "broken"},
            *fillers(filler),
        ],
    )

    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        report = add_tasks(layout, read_task_file(path), ledger=ledger)

    assert report.keys == ["same", *(f"filler-{n}" for n in range(filler))]
    assert (report.new, report.unchanged) == (filler, 1)
    by_line = errors_by_line(report.errors)
    assert "from its status file" in by_line[2]
    assert "broken.status.json" in by_line[3]
    after = {p.name: p.read_bytes() for p in layout.status_dir.iterdir()}
    assert {name: after[name] for name in before} == before
    assert len(after) == len(before) + filler


def test_a_key_stored_by_another_process_after_the_listing_is_not_overwritten(
    tmp_path: Path,
) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    listed = stored_keys(layout.status_dir)  # what discovery lists before it adds
    # Meanwhile another adder (the inbox sensor, `scrapeflow crawl`) stores two of the keys.
    theirs = {"name": "k", "params": {"url": "http://example.com/theirs"}}
    write_status(layout.status_dir, "k", theirs)
    write_status(layout.status_dir, "same", {"name": "same", "params": {"url": "http://e.com/s"}})
    path = write_jsonl(
        tmp_path / "tasks.jsonl",
        [
            {"url": "http://example.com/ours", "key": "k"},
            {"url": "http://e.com/s", "key": "same"},
            {"url": "http://example.com/new", "key": "new"},
        ],
    )

    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        report = add_tasks(layout, read_task_file(path), ledger=ledger, stored_keys=listed)

    assert report.keys == ["same", "new"]
    assert (report.new, report.unchanged) == (1, 1)
    assert "already has different params" in errors_by_line(report.errors)[1]
    assert load_status(layout.status_dir, "k") == theirs
    assert sorted(p.name for p in layout.status_dir.iterdir()) == [
        "k.status.json",
        "new.status.json",
        "same.status.json",
    ]
