"""The ledger's results as pandas frames (`read_pages`, `read_steps`, `read_current_state`),
next to scrapeflow's `read_status`, and the SELECT behind each, which `scrapeflow export` copies
to a file."""

from pathlib import Path
from typing import TYPE_CHECKING

from scrapeflow_dagster.engine.history.connection import connect_readonly

if TYPE_CHECKING:  # pandas costs ~50 MiB: imported (by DuckDB) only when a frame is built
    import pandas as pd

# What each exportable result holds, in a stable order. `seq` (the ingest order) is left out:
# it only breaks ties inside the database.
RESULTS: dict[str, str] = {
    "pages": "SELECT * FROM pages ORDER BY key",
    "steps": "SELECT * EXCLUDE (seq) FROM step_runs ORDER BY key, executor, ended_at, seq",
    "tasks": "SELECT * FROM tasks ORDER BY key",
    "current_state": "SELECT * EXCLUDE (seq) FROM current_state ORDER BY key, executor",
    "frontier": "SELECT * FROM frontier ORDER BY crawl, depth, parent, url",
}


def read_result(db_path: Path, name: str) -> "pd.DataFrame":
    """One of `RESULTS` as a DataFrame, read on a read-only connection closed at once.

    Raises:
        KeyError: when `name` is not one of `RESULTS`.
        FileNotFoundError: when there is no DuckDB file at `db_path` yet.
        LedgerLockedError: when a writer held the file for longer than the default wait.
    """
    sql = RESULTS[name]
    if not Path(db_path).is_file():
        raise FileNotFoundError(f"no DuckDB file at {db_path} (add tasks or run `db sync`)")
    conn = connect_readonly(Path(db_path))
    try:
        return conn.execute(sql).df()
    finally:
        conn.close()


def read_pages(db_path: Path) -> "pd.DataFrame":
    """The parsed pages (title, final URL, status, sizes, links), indexed by task key.

    Raises:
        FileNotFoundError, LedgerLockedError: as `read_result`.
    """
    return read_result(db_path, "pages").set_index("key")


def read_steps(db_path: Path) -> "pd.DataFrame":
    """Every recorded step run (`step_runs`), by key, executor and end time.

    Raises:
        FileNotFoundError, LedgerLockedError: as `read_result`.
    """
    return read_result(db_path, "steps")


def read_current_state(db_path: Path) -> "pd.DataFrame":
    """The latest run of each task and executor (the `current_state` view).

    Raises:
        FileNotFoundError, LedgerLockedError: as `read_result`.
    """
    return read_result(db_path, "current_state")
