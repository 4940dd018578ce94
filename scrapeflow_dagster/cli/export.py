"""`scrapeflow export pages|steps|tasks|current_state|frontier|outputs|extracted --format
parquet|csv|jsonl --output FILE [--executor NAME] [--selectors NAME]`: a result copied out by
DuckDB's own `COPY (SELECT ...) TO`, on a read-only connection."""

import argparse
from pathlib import Path

import duckdb

from scrapeflow_dagster.cli import common
from scrapeflow_dagster.engine.extract import SelectorSetError, load_selector_set
from scrapeflow_dagster.engine.history import RESULTS, connect_readonly, sync_spool
from scrapeflow_dagster.engine.history.reading.frames import executor_outputs_sql, extracted_sql
from scrapeflow_dagster.engine.state.layout import DataLayout

# Our format names -> DuckDB's (its JSON is one object per line) and the usual file suffixes.
FORMATS = {"parquet": "PARQUET", "csv": "CSV", "jsonl": "JSON"}
_SUFFIXES = {".parquet": "parquet", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
SUMMARY = "write a result (pages, steps, outputs, ...) to a parquet, csv or jsonl file"
DESCRIPTION = (
    "steps: every step run; current_state: the latest run of each task and executor; "
    "pages: one row per parsed page; tasks: the params of every task (credentials masked); "
    "frontier: every link discovery judged (parent, child, depth, outcome); outputs: each "
    "task's latest successful output per executor, as JSON, or with --executor NAME that "
    "executor's outputs with a typed column per field; extracted: each task's fields taken "
    "by its selector set, as JSON, or with --selectors NAME that set's rows with a column "
    "per field, typed as the set declares; page_text: each page's readable text and Markdown "
    "(when the page_text_max_chars setting keeps them); main_content: each page's main content "
    "as text and Markdown, with its title, author, dates, language, canonical URL, description "
    "and site name (when the page_main_content setting keeps them); render_choices: what "
    "render: auto learned per URL pattern (judgement, pages compared, pages the browser made "
    "a difference to, last check)."
)
# A best-effort sync first (as `db summary` does), so the export has what runs spooled; it
# waits little, and the read the rest of the usual wait.
_SYNC_LOCK_TIMEOUT_SECONDS = 1.0
_READ_LOCK_TIMEOUT_SECONDS = common.LOCK_TIMEOUT_SECONDS - _SYNC_LOCK_TIMEOUT_SECONDS


def add_parser(sub: common.Subparsers, parent: argparse.ArgumentParser) -> None:
    """`export RESULT --format F --output FILE`."""
    export = common.add_command(
        sub, parent, "export", cmd_export, summary=SUMMARY, description=DESCRIPTION
    )
    export.add_argument("result", choices=sorted(RESULTS))
    suffixes = "default: from the output file's suffix (.parquet, .csv, .jsonl)"
    export.add_argument("--format", choices=sorted(FORMATS), help=suffixes)
    export.add_argument("--output", "-o", required=True, metavar="FILE")
    export.add_argument(
        "--executor", metavar="NAME", help="outputs only: this executor's, a column per field"
    )
    export.add_argument(
        "--selectors", metavar="NAME", help="extracted only: this set's rows, a column per field"
    )


def cmd_export(args: argparse.Namespace) -> int:
    """Sync the spool (best effort), then `COPY` the result to the file; prints the row count."""
    layout = common.layout(args)
    output = Path(args.output).resolve()
    file_format = args.format or _SUFFIXES.get(output.suffix.lower())
    if file_format is None:
        raise common.UsageError(
            f"say --format {'|'.join(sorted(FORMATS))}: {output.name} has no known suffix"
        )
    if not layout.db_path.is_file():
        raise common.UsageError(f"no DuckDB file at {layout.db_path}: add tasks first")
    if not output.parent.is_dir():
        raise common.UsageError(f"no folder {output.parent} for {output.name}")
    if args.executor is not None and args.result != "outputs":
        raise common.UsageError(f"--executor {args.executor} goes with `export outputs` only")
    if args.selectors is not None and args.result != "extracted":
        raise common.UsageError(f"--selectors {args.selectors} goes with `export extracted` only")
    synced = sync_spool(
        layout.db_path, layout.spool_dir, lock_timeout_seconds=_SYNC_LOCK_TIMEOUT_SECONDS
    )
    conn = connect_readonly(layout.db_path, lock_timeout_seconds=_READ_LOCK_TIMEOUT_SECONDS)
    try:
        query = RESULTS[args.result]
        if args.executor is not None:
            if not _has_outputs_of(conn, args.executor):
                raise common.UsageError(f"no outputs of executor {args.executor!r} in DuckDB")
            query = executor_outputs_sql(conn, args.executor)
        if args.selectors is not None:
            query = extracted_sql(conn, args.selectors, _declared(layout, args.selectors, conn))
        row = conn.execute(
            f"COPY ({query}) TO ? (FORMAT {FORMATS[file_format]})", [str(output)]
        ).fetchone()
    finally:
        conn.close()
    rows = int(row[0]) if row else 0
    named = args.executor or args.selectors
    what = f"{args.result} of {named}" if named else args.result
    note = f" ({synced.pending_files} spool files not synced: DuckDB busy)" if synced.locked else ""
    print(f"exported {common.plural(rows, 'row')} of {what} to {output} ({file_format}){note}")
    return 0


def _has_outputs_of(conn: duckdb.DuckDBPyConnection, executor: str) -> bool:
    # A misspelt name would otherwise export an empty file without a word.
    return (
        conn.execute("SELECT 1 FROM outputs WHERE executor = ? LIMIT 1", [executor]).fetchone()
        is not None
    )


def _declared(
    layout: DataLayout, selectors: str, conn: duckdb.DuckDBPyConnection
) -> dict[str, str] | None:
    """The set's declared field types, from its file in the data folder; None (types found
    over the rows) when the file is gone but rows remain.

    Raises:
        UsageError: when the set has no file and no rows (a misspelt name), or its file is
            not valid.
    """
    try:
        selector_set = load_selector_set(layout.status_dir, selectors)
    except SelectorSetError as exc:
        if conn.execute(
            "SELECT 1 FROM extracted WHERE selectors = ? LIMIT 1", [selectors]
        ).fetchone():
            return None
        raise common.UsageError(f"--selectors: {exc}") from None
    return {field.name: field.duckdb_type for field in selector_set.fields}
