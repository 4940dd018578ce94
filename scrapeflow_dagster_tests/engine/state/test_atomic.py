"""Atomic writes: `create_bytes_atomic` and `create_files_atomic` never overwrite, and a temp
file left by a killed writer is never written through (it may be a second name of a status
file)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.state import atomic
from scrapeflow_dagster.engine.state.atomic import (
    create_bytes_atomic,
    sweep_stale_temp_files,
    write_bytes_atomic,
)

# A child that creates the file and exits: another process, as a concurrent adder is.
CREATE = (
    "import sys; from scrapeflow_dagster.engine.state.atomic import create_bytes_atomic; "
    "print(create_bytes_atomic(sys.argv[1], b'theirs'))"
)


def test_create_writes_a_new_file_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "k.status.json"
    assert create_bytes_atomic(target, b"ours") is True
    assert target.read_bytes() == b"ours"
    assert os.listdir(tmp_path) == ["k.status.json"]


def test_create_never_overwrites_a_file_another_process_created(tmp_path: Path) -> None:
    target = tmp_path / "k.status.json"
    made = subprocess.run(
        [sys.executable, "-c", CREATE, str(target)], capture_output=True, text=True, check=True
    )
    assert made.stdout.strip() == "True"
    assert create_bytes_atomic(target, b"ours") is False
    assert target.read_bytes() == b"theirs"
    assert os.listdir(tmp_path) == ["k.status.json"]


def test_a_leftover_temp_name_is_replaced_not_written_through(tmp_path: Path) -> None:
    # A writer killed between `link` and `unlink` leaves its temp name as a second name of
    # the status file; a later writer with the same pid (pids come back) and counter must
    # not truncate and rewrite that shared file.
    status = tmp_path / "k.status.json"
    status.write_bytes(b"stored")
    upcoming = next(atomic._counter) + 1
    for n in range(upcoming, upcoming + 3):
        os.link(status, tmp_path / f".other.{os.getpid()}.{n}.tmp")
    write_bytes_atomic(tmp_path / "other", b"new")
    assert status.read_bytes() == b"stored"
    assert (tmp_path / "other").read_bytes() == b"new"


def test_sweep_removes_a_leftover_that_shares_its_status_file(tmp_path: Path) -> None:
    status = tmp_path / "k.status.json"
    status.write_bytes(b"stored")
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    )
    os.link(status, tmp_path / f".k.status.json.{dead.stdout.strip()}.0.tmp")
    assert sweep_stale_temp_files(tmp_path) == 1
    assert os.listdir(tmp_path) == ["k.status.json"]
    assert status.read_bytes() == b"stored"


def _many(count: int) -> list[tuple[str, bytes]]:
    return [(f"k{n}.status.json", f'{{"n": {n}}}'.encode()) for n in range(count)]


def _create_many_in_both_ways(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 2,500 files: enough for the writer threads; some exist before (another process's).
    for way in ("tmpfile", "named temp"):
        folder = tmp_path / way
        folder.mkdir()
        if way == "named temp":  # a file system without O_TMPFILE (or no /proc)
            monkeypatch.setattr(atomic, "_tmpfile_usable", False)
        files = _many(2_500)
        for name, _ in files[::100]:
            (folder / name).write_bytes(b"theirs")
        assert atomic.create_files_atomic(folder, files) == [n % 100 != 0 for n in range(2_500)]
        for n, (name, data) in enumerate(files):
            assert (folder / name).read_bytes() == (b"theirs" if n % 100 == 0 else data)
        assert sorted(os.listdir(folder)) == sorted(name for name, _ in files)  # no temp files
        if way == "tmpfile":
            assert atomic._tmpfile_usable  # it did not fall back to named temp files


def test_create_many_keeps_order_and_never_overwrites(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert atomic._tmpfile_usable, "this Linux should offer O_TMPFILE and /proc/self/fd"
    _create_many_in_both_ways(tmp_path, monkeypatch)


def test_create_many_names_a_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        atomic.create_files_atomic(tmp_path / "missing", _many(3))
