"""What a batched SQLite event log wrote, read back with plain sqlite3 (no flush): a
shard's rows, and every row of the tables asset events touch."""

import sqlite3
from pathlib import Path
from typing import Any


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
