"""History: every task and step run recorded in DuckDB, queryable while runs go on.

DuckDB lets one process open a database file read-write, and none while another process holds
it (even read-only). So writers never open DuckDB on the hot path: a `Ledger` buffers rows and
spools them to JSONL files, and `sync_spool` moves the spool into DuckDB whenever it gets the
lock (idempotently per file, so a crash loses or doubles no row). The status files stay the
truth: `rebuild_from_status_dir` makes DuckDB agree with them.

Subpackages, each `__init__` saying what it holds and may import (bottom first: a subpackage
imports only those above it in this list):
    database: DuckDB's tables (`schema`), the ingest statements (`spool_sql`), the one-writer
        `connection`, each task's `current` state.
    markers: the marker each open Ledger keeps (since when DuckDB may lag the files).
    recording: the `rows` and their `spool_lines`, the `spool` files, the `Ledger`, `sync`.
    from_status_files: `rebuild` (DuckDB made to agree with the status files, read through
        `engine.state`) and `repair` (the rows a killed run lost).
    counting: `scrapeflow status`'s exact counts from DuckDB and the files it lags
        (`status_counts`, `status_folder`, `status_labels`).
    reading: `queries` and `summary_text`, `frames` (pandas), `crawl_report`, `change_report`.

Imports allowed: `scrapeflow_dagster.engine.errors`, `scrapeflow_dagster.engine.redact`,
`scrapeflow_dagster.engine.canonical` (a task's canonical URL, kept beside it),
`scrapeflow_dagster.engine.state.*` (the status format has its one owner there), duckdb,
orjson. Never Dagster, never `run`, `executors` or `proxies`: the run records through a Ledger.
"""

from scrapeflow_dagster.engine.history.counting.status_counts import StatusCounts, count_statuses
from scrapeflow_dagster.engine.history.database.connection import (
    LedgerLockedError,
    connect_readonly,
    find_lock_holder,
)
from scrapeflow_dagster.engine.history.from_status_files.rebuild import (
    RebuildResult,
    StatusFileProblem,
    parse_status_file,
    rebuild_from_status_dir,
)
from scrapeflow_dagster.engine.history.reading.frames import (
    RESULTS,
    read_current_state,
    read_extracted,
    read_outputs,
    read_pages,
    read_result,
    read_steps,
)
from scrapeflow_dagster.engine.history.reading.queries import QUERIES, summary_text
from scrapeflow_dagster.engine.history.recording.ledger import Ledger
from scrapeflow_dagster.engine.history.recording.rows import (
    FRONTIER_OUTCOMES,
    STEP_STATUSES,
    FrontierRow,
    OutputRow,
    PageRow,
    StepRow,
    TaskRow,
)
from scrapeflow_dagster.engine.history.recording.spool import default_spool_dir, new_spool_name
from scrapeflow_dagster.engine.history.recording.sync import SyncResult, sync_spool
from scrapeflow_dagster.engine.state.schema import utc_now

__all__ = [
    "FRONTIER_OUTCOMES",
    "QUERIES",
    "RESULTS",
    "STEP_STATUSES",
    "FrontierRow",
    "OutputRow",
    "Ledger",
    "LedgerLockedError",
    "RebuildResult",
    "StatusCounts",
    "StatusFileProblem",
    "PageRow",
    "StepRow",
    "SyncResult",
    "TaskRow",
    "connect_readonly",
    "default_spool_dir",
    "find_lock_holder",
    "new_spool_name",
    "parse_status_file",
    "read_current_state",
    "read_extracted",
    "read_outputs",
    "read_pages",
    "read_result",
    "read_steps",
    "rebuild_from_status_dir",
    "count_statuses",
    "summary_text",
    "sync_spool",
    "utc_now",
]
