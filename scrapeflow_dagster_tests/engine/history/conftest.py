"""Fixtures of the history tests: a DuckDB path, and other processes that hold it."""

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HOLDER = textwrap.dedent(
    """
    import sys, duckdb
    conn = duckdb.connect(sys.argv[1], read_only=sys.argv[2] == "ro")
    print("ready", flush=True)
    sys.stdin.read()  # hold the file until the test closes our stdin
    """
)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """Where the ledger's DuckDB file goes (not created)."""
    return tmp_path / "ledger.duckdb"


@pytest.fixture
def hold_database() -> Iterator[Any]:
    """`hold(path, "rw" | "ro")`: another process that opens the file and keeps it open."""
    holders: list[subprocess.Popen[str]] = []

    def hold(path: Path, mode: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(path), mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        holders.append(proc)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        return proc

    yield hold
    for proc in holders:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
