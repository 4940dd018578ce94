"""What the UI shows of each executor's results table: its rows in DuckDB's `outputs` (the
`dagster/row_count` and `dagster/column_schema` metadata conventions).

The metadata goes on the last materialisation an asset logs in a step: that event is held back
until the step's tasks are done and the run's rows are in DuckDB, then logged with the table's
row count (all of the executor's rows) and the columns of its outputs (the fixed columns and
one per output field: as the executor declares them (`declares_output`), else typed as DuckDB
finds them over this run's rows; as `scrapeflow export outputs --executor NAME` gives them).
A declared shape is also the asset's definition metadata, shown before any run. The UI's asset
page shows the latest materialisation's schema and row count. No event is added: a step logs
as many as before.
"""

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import orjson

from scrapeflow_dagster.engine.history import LedgerLockedError, connect_readonly
from scrapeflow_dagster.engine.history.reading.frames import declared_structure, group_structure_sql
from scrapeflow_dagster.lib.partition_events import LogMaterialization

ROW_COUNT = "dagster/row_count"
COLUMN_SCHEMA = "dagster/column_schema"
# The columns every executor's rows have (`engine.history.reading.frames.OUTPUT_COLUMNS`), typed.
FIXED_COLUMNS = (
    ("key", "VARCHAR"),
    ("url", "VARCHAR"),
    ("ended_at", "TIMESTAMP"),
    ("run_id", "VARCHAR"),
    ("output_bytes", "BIGINT"),
)
# A step's end waits this long for DuckDB at most; without it the metadata is left out.
LOCK_TIMEOUT_SECONDS = 2.0
# The read's cap: a million tasks' rows need ~143 MiB RSS under it (`group_structure_sql`).
READ_MEMORY_LIMIT = "64MB"


class HeldBack:
    """A `LogMaterialization` that logs each asset's materialisations one behind, so the last
    one can carry what is known only at the end (`finish`)."""

    def __init__(self, log: LogMaterialization) -> None:
        self._log = log
        self._held: dict[dg.AssetKey, dg.AssetMaterialization] = {}

    def __call__(self, materialization: dg.AssetMaterialization) -> None:
        earlier = self._held.get(materialization.asset_key)
        self._held[materialization.asset_key] = materialization
        if earlier is not None:
            self._log(earlier)

    def finish(self, metadata: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        """Log the held materialisations, each with the `metadata` of its asset (by name)."""
        held, self._held = self._held, {}
        for key, materialization in held.items():
            extra = (metadata or {}).get(key.to_user_string())
            if extra:
                materialization = materialization.with_metadata(
                    {**materialization.metadata, **extra}
                )
            self._log(materialization)


def table_metadata(
    db_path: Path, executors: Sequence[str], run_id: str
) -> dict[str, dict[str, Any]]:
    """Each executor's row count and columns (see the module); {} when DuckDB has no file yet,
    a writer holds it longer than `LOCK_TIMEOUT_SECONDS`, or it cannot be read (metadata never
    fails a run)."""
    if not db_path.is_file():
        return {}
    try:
        conn = connect_readonly(db_path, lock_timeout_seconds=LOCK_TIMEOUT_SECONDS)
    except (LedgerLockedError, duckdb.Error):
        return {}
    try:
        # A run step's end: DuckDB's defaults (every core, 80% of RAM) are not its to take.
        conn.execute("SET threads = 1")
        conn.execute(f"SET memory_limit = '{READ_MEMORY_LIMIT}'")
        return _read(conn, executors, run_id)
    except duckdb.Error:  # a file from before `outputs`, never synced since
        return {}
    finally:
        conn.close()


def _read(
    conn: duckdb.DuckDBPyConnection, executors: Sequence[str], run_id: str
) -> dict[str, dict[str, Any]]:
    """`table_metadata` on an open read-only connection."""
    found: dict[str, dict[str, Any]] = {}
    for executor in executors:
        row = conn.execute("SELECT count(*) FROM outputs WHERE executor = ?", [executor]).fetchone()
        structure = declared_structure(conn, executor)
        if structure is None:
            structure = _found_structure(conn, executor, run_id)
        found[executor] = {
            ROW_COUNT: dg.MetadataValue.int(int(row[0]) if row else 0),
            COLUMN_SCHEMA: output_schema(structure),
        }
    return found


def _found_structure(conn: duckdb.DuckDBPyConnection, executor: str, run_id: str) -> str | None:
    """The structure of `executor`'s outputs in run `run_id`, as DuckDB finds it; None (one
    `output` JSON column) when it does not fit `READ_MEMORY_LIMIT`: outputs with a field keyed
    by data (a map of headers, of ids) have about as many structures as rows."""
    try:
        shape = conn.execute(
            group_structure_sql("output", "FROM outputs WHERE executor = ? AND run_id = ?"),
            [executor, run_id],
        ).fetchone()
    except duckdb.OutOfMemoryException:
        return None
    return shape[0] if shape else None


def output_schema(structure: str | None) -> dg.TableSchema:
    """The schema of an executor's rows whose outputs have `structure` (a
    `json_group_structure`, or a declared shape's `transform_structure`)."""
    return dg.TableSchema(columns=_columns(structure))


def _columns(structure: str | None) -> list[dg.TableColumn]:
    """The fixed columns, then one per field of the outputs' structure (`output` JSON when the
    outputs are not objects); a field named like a fixed column is `output.<name>`."""
    columns = [dg.TableColumn(name, kind) for name, kind in FIXED_COLUMNS]
    shape = orjson.loads(structure) if structure else None
    if not isinstance(shape, dict):
        return [*columns, dg.TableColumn("output", "JSON")]
    fixed = {name for name, _ in FIXED_COLUMNS}
    for name, kind in shape.items():
        column = f"output.{name}" if name in fixed else name
        columns.append(dg.TableColumn(column, _type_name(kind)))
    return columns


def _type_name(kind: object) -> str:
    """A DuckDB type name for a `json_group_structure` node: `VARCHAR`, `VARCHAR[]`, `JSON`."""
    if isinstance(kind, str):
        return "JSON" if kind == "NULL" else kind
    if isinstance(kind, list) and kind:
        return f"{_type_name(kind[0])}[]"
    return "JSON"
