"""The inbox's hand-over: a file leaves the inbox only once its keys are partitions and its
runs are written down; a tick that fails anywhere before that leaves the file to be taken
again, with no task stored twice."""

from collections.abc import Sequence
from pathlib import Path

import orjson
import pytest

from scrapeflow_dagster.engine.history import Ledger, connect_readonly
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.tasks.inbox import (
    Skipped,
    Taken,
    accepted_dir,
    done_dir,
    finish_batch,
    pending_batches,
    split_into_parts,
    take_file,
    take_waiting_files,
    waiting_files,
)


class Partitions:
    """An in-memory partition list in insertion order, like Dagster's dynamic partitions."""

    def __init__(self, *, fail_after_keys: int | None = None) -> None:
        self.keys: list[str] = []
        self.fail_after_keys = fail_after_keys

    def add(self, keys: Sequence[str]) -> None:
        for key in keys:
            if self.fail_after_keys is not None and len(self.keys) >= self.fail_after_keys:
                raise ConnectionError("instance storage went away")
            if key not in self.keys:
                self.keys.append(key)

    def plan(self, keys: Sequence[str]) -> list[tuple[str, str]]:
        return [(keys[0], keys[-1])] if keys else []


@pytest.fixture
def layout(tmp_path: Path) -> DataLayout:
    return DataLayout(tmp_path / "data").ensure()


def drop(layout: DataLayout, name: str, count: int, *, start: int = 0) -> Path:
    lines = ["key,url", *(f"k{n:05d},http://127.0.0.1:9/p/{n}" for n in range(start, count))]
    path = layout.inbox_dir / name
    path.write_text("\n".join(lines) + "\n")
    return path


def take(layout: DataLayout, path: Path, partitions: Partitions) -> None:
    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        take_file(
            layout,
            path,
            ledger=ledger,
            add_partitions=partitions.add,
            plan_first_runs=partitions.plan,
        )


def take_all(layout: DataLayout, partitions: Partitions, **limits: int) -> list[Taken | Skipped]:
    """One tick's worth of `take_waiting_files` (a budget no test reaches)."""
    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        return list(
            take_waiting_files(
                layout,
                ledger=ledger,
                add_partitions=partitions.add,
                plan_first_runs=partitions.plan,
                budget_seconds=60,
                **limits,  # type: ignore[arg-type]
            )
        )


def test_a_file_stays_in_the_inbox_until_its_keys_are_partitions(layout: DataLayout) -> None:
    path = drop(layout, "a.csv", 50)
    failing = Partitions(fail_after_keys=20)

    with pytest.raises(ConnectionError):
        take(layout, path, failing)

    assert path.exists() and not pending_batches(layout)
    healthy = Partitions()
    healthy.keys = list(failing.keys)  # what the failed tick had added
    take(layout, path, healthy)

    assert healthy.keys == [f"k{n:05d}" for n in range(50)]
    (batch,) = pending_batches(layout)
    # Params are stored before any partition is added: the failed try stored all 50.
    assert (batch.tasks, batch.new, batch.refused) == (50, 0, 0)
    assert batch.ranges == [("k00000", "k00049")]
    assert not path.exists()
    with connect_readonly(layout.db_path) as conn:
        assert conn.execute("SELECT count(*), count(DISTINCT key) FROM tasks").fetchall() == [
            (50, 50)
        ]


def test_a_batch_written_before_a_crash_keeps_its_runs(layout: DataLayout) -> None:
    """Killed after the batch was written, before the file moved: taking the file again
    keeps the first batch (same run keys), so no run is requested twice."""
    path = drop(layout, "a.csv", 5)
    partitions = Partitions()
    take(layout, path, partitions)
    (first,) = pending_batches(layout)
    # Put the file back where the killed tick would have left it.
    (moved,) = done_dir(layout).glob("*-a.csv")
    moved.rename(path)

    take(layout, path, partitions)

    assert pending_batches(layout) == [first]
    assert len(list(done_dir(layout).glob("*a.csv"))) == 1


def test_a_finished_batch_moves_beside_its_file(layout: DataLayout) -> None:
    take(layout, drop(layout, "a.csv", 3), Partitions())
    (batch,) = pending_batches(layout)

    finish_batch(layout, batch)

    assert not pending_batches(layout) and not list(accepted_dir(layout).iterdir())
    stored = orjson.loads((done_dir(layout) / f"{batch.stored_as}.batch.json").read_bytes())
    assert stored["ranges"] == [["k00000", "k00002"]]


def test_an_unreadable_batch_is_named_not_skipped(layout: DataLayout) -> None:
    accepted_dir(layout).mkdir()
    (accepted_dir(layout) / "broken.json").write_text("{not json")

    with pytest.raises(ValueError, match="broken.json"):
        pending_batches(layout)


def test_files_are_taken_whole_oldest_name_first_within_the_tick_budget(
    layout: DataLayout,
) -> None:
    for name in ("b.csv", "a.csv", "c.txt.part"):
        drop(layout, name, 2)
    partitions = Partitions()

    taken = take_all(layout, partitions, max_files=1)

    assert [t.batch.source for t in taken] == ["a.csv"]
    assert [p.name for p in waiting_files(layout)] == ["b.csv"]  # `.part` is never taken


def test_a_big_file_is_cut_into_parts_whose_errors_name_the_original_lines(
    layout: DataLayout,
) -> None:
    lines = ["key,url", *(f"k{n:05d},http://127.0.0.1:9/p/{n}" for n in range(25))]
    lines[7] = "bad/key,http://127.0.0.1:9/p/bad"  # original line 8
    lines[23] = "k-ftp,ftp://127.0.0.1/p"  # original line 24
    (layout.inbox_dir / "big.csv").write_text("\n".join(lines))  # no final newline
    partitions = Partitions()

    taken = take_all(layout, partitions, max_files=10, part_lines=10)

    assert [t.batch.source for t in taken] == [
        "big.csv.lines-000000002-000000011.csv",
        "big.csv.lines-000000012-000000021.csv",
        "big.csv.lines-000000022-000000026.csv",
    ]
    expected = [f"k{n:05d}" for n in range(25) if n not in (6, 22)]
    assert partitions.keys == expected
    errors = [e for t in taken for e in t.errors]
    big = layout.inbox_dir / "big.csv"
    assert [e.split(": ")[0] for e in errors] == [f"{big}:8", f"{big}:24"]
    assert not waiting_files(layout)
    assert len(list(done_dir(layout).glob("*-big.csv"))) == 1  # the original, as it came


def test_cutting_again_after_a_kill_writes_the_same_parts(layout: DataLayout) -> None:
    path = drop(layout, "big.txt.csv", 30)
    content = path.read_bytes()

    assert split_into_parts(layout, path, part_lines=12)
    parts = {p.name: p.read_bytes() for p in waiting_files(layout)}
    # Killed before the original moved: it is cut again, into the very same parts.
    path.write_bytes(content)
    assert split_into_parts(layout, path, part_lines=12)

    assert {p.name: p.read_bytes() for p in waiting_files(layout)} == parts
    assert len(parts) == 3
    assert not split_into_parts(layout, waiting_files(layout)[0], part_lines=12)


def test_an_unreadable_file_is_skipped_not_blocking_the_files_behind_it(
    layout: DataLayout,
) -> None:
    # Read by root, a file's mode stops nothing: this one fails with EIO on every read.
    broken = layout.inbox_dir / "a-broken.csv"
    broken.symlink_to("/proc/self/mem")
    good = drop(layout, "b.csv", 3)
    partitions = Partitions()

    first = take_all(layout, partitions, max_files=5)
    second = take_all(layout, partitions, max_files=5)

    assert [type(t) for t in first] == [Skipped, Taken]
    skipped = first[0]
    assert isinstance(skipped, Skipped) and skipped.path == broken
    assert str(broken) in skipped.reason and "cannot be read" in skipped.reason
    assert partitions.keys == ["k00000", "k00001", "k00002"] and not good.exists()
    assert broken.is_symlink()  # left where its owner put it
    assert [type(t) for t in second] == [Skipped]  # said again each tick, still skipped
