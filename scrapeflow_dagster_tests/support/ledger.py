"""Read-only queries of the ledger's DuckDB file, as a test checks what a run recorded."""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb


def query(db_path: Path, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Rows of `sql` on the DuckDB file, opened read-only and closed at once."""
    conn = duckdb.connect(str(db_path), read_only=True)
    try:
        return conn.execute(sql, list(params)).fetchall()
    finally:
        conn.close()


def current_state(db_path: Path, executor: str) -> dict[str, dict[str, Any]]:
    """key -> the `current_state` row of `executor`, as a dict."""
    columns = "key, status, error_class, error_kind, attempts, http_status, size, md5, run_id"
    rows = query(db_path, f"SELECT {columns} FROM current_state WHERE executor = ?", [executor])
    names = [c.strip() for c in columns.split(",")]
    return {row[0]: dict(zip(names, row, strict=True)) for row in rows}
