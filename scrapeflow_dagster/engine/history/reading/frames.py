"""The ledger's results as pandas frames (`read_pages`, `read_steps`, `read_current_state`,
`read_outputs`, `read_extracted`), next to scrapeflow's `read_status`, and the SELECT behind
each, which `scrapeflow export` copies to a file."""

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import orjson

from scrapeflow_dagster.engine.history.database.connection import connect_readonly

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
    "outputs": "SELECT * FROM outputs ORDER BY key, executor",
    "extracted": "SELECT * FROM extracted ORDER BY key, executor",
    "page_text": "SELECT * FROM page_text ORDER BY key",
    "main_content": "SELECT * FROM main_content ORDER BY key",
    "changes": "SELECT * FROM changes ORDER BY detected_at, key",
    "revisits": "SELECT * FROM revisits ORDER BY due_at, key",
    "render_choices": "SELECT * FROM render_choices ORDER BY pattern",
}

# The columns an executor's outputs have beside their own fields (`executor_outputs_sql`).
OUTPUT_COLUMNS = ("key", "url", "ended_at", "run_id", "output_bytes")


def group_structure_sql(column: str, rows: str) -> str:
    """The SELECT of `json_group_structure(column)` over `rows` (`FROM ... WHERE ...`), in
    memory that grows with the rows' distinct structures, not with the rows.

    DuckDB's aggregate is `json_structure(json_group_array(column))`: an array of every row.
    Over a million pages' outputs it took 11 GB (a run step's end, 2026-11-29), and under a
    256 MB cap it fails. Rows of one `json_structure` add the same to the merged structure, so
    it is taken over one row of each: the same answer, in a hash table of the distinct
    structures (143 MiB RSS under a 64 MB cap for the same million rows). Rows with a field
    keyed by data (a map of headers) can each have a structure of their own: then it holds
    about as much as the aggregate did.
    """
    distinct = f"SELECT any_value({column}) AS sample {rows} GROUP BY json_structure({column})"
    return f"SELECT json_group_structure(sample) FROM ({distinct})"


def executor_outputs_sql(conn: duckdb.DuckDBPyConnection, executor: str) -> str:
    """The SELECT of one executor's outputs with each output field as a typed column.

    The columns are those the executor declares (`declares_output`, recorded by its runs in
    `output_columns`), else the fields DuckDB finds over its stored outputs, typed as found
    (`json_group_structure`: a field that is a number in one row and text in another is
    JSON). A field named like one of `OUTPUT_COLUMNS` comes out as `output.<name>`. An
    executor whose outputs are not objects keeps them in one `output` JSON column.
    """
    literal = _sql_text(executor)
    structure = declared_structure(conn, executor)
    if structure is None:
        row = conn.execute(
            group_structure_sql("output", f"FROM outputs WHERE executor = {literal}")
        ).fetchone()
        structure = row[0] if row else None
    columns = ", ".join(OUTPUT_COLUMNS)
    order = f"FROM outputs WHERE executor = {literal} ORDER BY key"
    if not isinstance(structure, str) or not structure.startswith("{"):
        return f"SELECT {columns}, output {order}"
    names = list(orjson.loads(structure))
    if not names:
        return f"SELECT {columns} {order}"
    picked = ", ".join(
        f"typed[{_sql_text(name)}] AS {_identifier(_field_column(name))}" for name in names
    )
    typed = f"json_transform(output, {_sql_text(structure)}) AS typed"
    rows = f"SELECT *, {typed} FROM outputs WHERE executor = {literal}"
    return f"SELECT {columns}, {picked} FROM ({rows}) ORDER BY key"


def declared_structure(conn: duckdb.DuckDBPyConnection, executor: str) -> str | None:
    """The `json_transform` structure of the output shape `executor` declares, or None."""
    try:
        row = conn.execute(
            "SELECT columns FROM output_columns WHERE executor = ?", [executor]
        ).fetchone()
    except duckdb.CatalogException:  # a ledger from before declarations
        return None
    if not row or not isinstance(row[0], str):
        return None
    return transform_structure(orjson.loads(row[0]))


def transform_structure(declared: dict[str, str]) -> str:
    """The `json_transform` structure of declared columns (field -> DuckDB type, `T[]` a list)."""
    return orjson.dumps(
        {name: [kind[:-2]] if kind.endswith("[]") else kind for name, kind in declared.items()}
    ).decode()


# The columns of a selector set's rows beside their fields (`extracted_sql`); a set's field
# cannot take these names (`engine.extract.selectors.RESERVED_FIELDS`).
EXTRACTED_COLUMNS = ("key", "executor", "url", "missing", "invalid", "ended_at", "run_id")


def extracted_sql(
    conn: duckdb.DuckDBPyConnection, selectors: str, declared: dict[str, str] | None = None
) -> str:
    """The SELECT of one selector set's rows with a typed column per field.

    Args:
        conn: a connection to the ledger.
        selectors: the set's name.
        declared: field name -> DuckDB type (`Field.duckdb_type`, `VARCHAR[]` for a list), in
            the set's order: its columns, even for a field no row has yet. None: the types
            DuckDB finds over the stored rows (`json_group_structure`).
    """
    literal = _sql_text(selectors)
    if declared is not None:
        structure = transform_structure(declared)
    else:
        row = conn.execute(
            group_structure_sql("fields", f"FROM extracted WHERE selectors = {literal}")
        ).fetchone()
        structure = row[0] if row and isinstance(row[0], str) else "{}"
    names = list(orjson.loads(structure)) if structure.startswith("{") else []
    columns = ", ".join(EXTRACTED_COLUMNS)
    picked = "".join(f", typed[{_sql_text(name)}] AS {_identifier(name)}" for name in names)
    typed = f"json_transform(fields, {_sql_text(structure)}) AS typed" if names else "NULL AS typed"
    rows = f"SELECT *, {typed} FROM extracted WHERE selectors = {literal}"
    return f"SELECT {columns}{picked} FROM ({rows}) ORDER BY key, executor"


def _field_column(name: str) -> str:
    return f"output.{name}" if name in OUTPUT_COLUMNS else name


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def read_result(db_path: Path, name: str) -> "pd.DataFrame":
    """One of `RESULTS` as a DataFrame, read on a read-only connection closed at once.

    Raises:
        KeyError: when `name` is not one of `RESULTS`.
        FileNotFoundError: when there is no DuckDB file at `db_path` yet.
        LedgerLockedError: when a writer held the file for longer than the default wait.
    """
    sql = RESULTS[name]
    return _frame(db_path, lambda _conn: sql)


def _frame(db_path: Path, query: Callable[[duckdb.DuckDBPyConnection], str]) -> "pd.DataFrame":
    """The frame of the SELECT `query` builds on a read-only connection to the ledger.

    Raises:
        FileNotFoundError, LedgerLockedError: as `read_result`.
    """
    if not Path(db_path).is_file():
        raise FileNotFoundError(f"no DuckDB file at {db_path} (add tasks or run `db sync`)")
    conn = connect_readonly(Path(db_path))
    try:
        return conn.execute(query(conn)).df()
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


def read_outputs(db_path: Path, executor: str | None = None) -> "pd.DataFrame":
    """The stored outputs: every executor's as JSON, or one `executor`'s with a typed column
    per output field (`executor_outputs_sql`).

    Raises:
        FileNotFoundError, LedgerLockedError: as `read_result`.
    """
    if executor is None:
        return read_result(db_path, "outputs")
    return _frame(db_path, lambda conn: executor_outputs_sql(conn, executor))


def read_extracted(
    db_path: Path, selectors: str | None = None, declared: dict[str, str] | None = None
) -> "pd.DataFrame":
    """The extractions: every set's fields as JSON, or one set's with a typed column per field
    (`extracted_sql`; `declared` types them as the set declares).

    Raises:
        FileNotFoundError, LedgerLockedError: as `read_result`.
    """
    if selectors is None:
        return read_result(db_path, "extracted")
    return _frame(db_path, lambda conn: extracted_sql(conn, selectors, declared))
