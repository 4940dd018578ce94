"""Dagster's SQLite event log storage, with a process's asset events written in batches.

Configure it in `$DAGSTER_HOME/dagster.yaml` (run and schedule storage keep their defaults,
the same files as `storage: sqlite:`)::

    event_log_storage:
      module: scrapeflow_dagster.storage.sqlite.event_log
      class: BatchedSqliteEventLogStorage
      config:
        base_dir: /abs/home/history/runs/

Stock Dagster commits each materialisation, planned materialisation and observation twice (run
shard, then index shard), ~11 ms per event on a small machine. Here a run's asset events of
these kinds (and planned events outside any run) wait in a per-process buffer (`buffer`: which
ones, and when it is flushed) and are written together (`batch_write`): one transaction per run
shard, then one in the index shard.

Shards are opened through one engine per shard, the index shard held open by an idle
connection so that its WAL files are not deleted and made again at every query, and new run
shards are copies of one made by stock `_initdb` (`sqlite_shards`): ~0.1-0.2 s less of every
run's fixed cost.

A process killed with SIGKILL loses at most its buffered events; each shard's part of a batch
is one transaction, so what is stored stays consistent (a kill between the two transactions
leaves events in the run shard only, as stock Dagster can for one event).

Every other event (runless materialisations and observations included) is stored as stock
Dagster stores it. What a batch leaves out (a run shard's copies past a sample, superseded
planned rows, Dagster's wrapping of bodies) is `lean_writes`'s.
A new `index.db` is made with `auto_vacuum=INCREMENTAL`, so the pages a prune frees
(`retention`, configured by a `retention:` key here) can be given back to the disk.
ASSET_FAILED_TO_MATERIALIZE events never reach an SQLite storage
(`can_store_asset_failure_events` is False: the instance drops them); a partition's FAILED
state comes from its planned event and its run's status, both kept as stock writes them.
On a Dagster or dagster-webserver other than the ones this was written against, nothing is
buffered (`version_guard`).
"""

import threading
from collections.abc import Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from typing import Any, TypedDict

import dagster as dg
import sqlalchemy as db
from dagster._core.events import DagsterEventType
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.base import EventLogConnection
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SqliteEventLogStorage,
)
from dagster._serdes import ConfigurableClassData
from sqlalchemy.engine import Connection, Engine

from scrapeflow_dagster.storage.batches.bodies import install as install_body_reader
from scrapeflow_dagster.storage.batches.buffer import BufferedEventLog
from scrapeflow_dagster.storage.batches.buffered_events import (
    DEFAULT_MAX_BUFFER_SECONDS,
    DEFAULT_MAX_BUFFERED_EVENTS,
    buffer_config_fields,
)
from scrapeflow_dagster.storage.batches.lean_writes import (
    SAMPLED_TYPES,
    RunLogSample,
    delete_superseded_planned,
    lean_writes_config_field,
    lean_writes_from_config,
)
from scrapeflow_dagster.storage.batches.write import (
    MAX_EVENT_ID,
    AfterInsert,
    rows_by_run,
    write_index_shard,
    write_run_shard,
)
from scrapeflow_dagster.storage.dagster_internals.version_guard import (
    SQLITE_PACKAGES,
    supports_installed_versions,
)
from scrapeflow_dagster.storage.planned.behind import drop_superseded
from scrapeflow_dagster.storage.planned.rows import Row
from scrapeflow_dagster.storage.retention.prune import policy_from_config, retention_config_field
from scrapeflow_dagster.storage.sqlite.shards import ShardEngines, ShardTemplate, is_stamped


class BatchedSqliteConfig(TypedDict, total=False):
    base_dir: str
    max_buffered_events: int
    max_buffer_seconds: float
    retention: dict[str, Any]
    lean_writes: dict[str, Any]


# A materialisation's JSON row is ~2.1-2.6 KB: one per 4 KB page (SQLite's default), half of
# each page empty; 16 KB pages hold seven. Measured on a 1,000-task chain run's index shard
# (bodies as JSON): 15.2 -> 10.6 KB per task.
INDEX_PAGE_SIZE = 16384


def _new_index_shard_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # Both take effect on a database with no table yet; on any other they change nothing.
    dbapi_connection.execute(f"PRAGMA page_size = {INDEX_PAGE_SIZE}")
    dbapi_connection.execute("PRAGMA auto_vacuum = INCREMENTAL")


class BatchedSqliteEventLogStorage(BufferedEventLog, SqliteEventLogStorage):
    """SQLite event log storage writing a process's asset events in batches (see the module)."""

    def __init__(
        self,
        base_dir: str,
        inst_data: ConfigurableClassData | None = None,
        *,
        max_buffered_events: int = DEFAULT_MAX_BUFFERED_EVENTS,
        max_buffer_seconds: float = DEFAULT_MAX_BUFFER_SECONDS,
        retention: Mapping[str, Any] | None = None,
        lean_writes: Mapping[str, Any] | None = None,
    ):
        """Args:
        base_dir: the folder of the run shards and `index.db`, as for SqliteEventLogStorage.
        inst_data: set by Dagster when the storage comes from `dagster.yaml`.
        max_buffered_events: flush when this many events wait; 0 stores every event at once.
        max_buffer_seconds: flush when an event arrives and the oldest waiting is this old.
        retention: the home's `retention` block (`retention`); None: nothing is pruned.
        lean_writes: the `lean_writes` block (`lean_writes`); None: its defaults.

        Raises:
            DagsterInvalidConfigError: for `vacuum_after_deleted` set (Postgres only).
        """
        self.retention_policy = policy_from_config(retention)
        self.lean_writes = lean_writes_from_config(lean_writes)
        if self.lean_writes.vacuum_after_deleted is not None:
            raise dg.DagsterInvalidConfigError(
                "lean_writes.vacuum_after_deleted is for the Postgres storage: SQLite reuses a"
                " deleted row's page at once (leave it out, or null)",
                [],
                self.lean_writes.vacuum_after_deleted,
            )
        self._run_log_sample = RunLogSample(self.lean_writes.run_log_asset_events)
        self._run_reads = threading.local()  # `from_index`: this thread's run read (see below)
        install_body_reader()  # whatever writes, a home's compact bodies read as JSON
        self._init_buffer(
            max_buffered_events=max_buffered_events,
            max_buffer_seconds=max_buffer_seconds,
            batching=supports_installed_versions(SQLITE_PACKAGES),
        )
        self._shard_engines = ShardEngines()
        self._shard_template = ShardTemplate()
        super().__init__(base_dir, inst_data=inst_data)

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        return {
            "base_dir": dg.StringSource,
            **buffer_config_fields(),
            "retention": retention_config_field(),
            "lean_writes": lean_writes_config_field(),
        }

    @classmethod
    def from_config_value(  # type: ignore[override]
        cls, inst_data: ConfigurableClassData | None, config_value: BatchedSqliteConfig
    ) -> "BatchedSqliteEventLogStorage":
        return cls(inst_data=inst_data, **config_value)

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        if not self._batching:
            with super()._connect(shard) as conn:
                yield conn
            return
        # As stock, with the shard's engine kept (see the module).
        with self._db_lock:
            conn_string = self.conn_string_for_shard(shard)
            engine = self._shard_engines.get(conn_string)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            if shard == INDEX_SHARD_NAME:
                # Not a run shard: the webserver follows a run's events by watching its `.db`
                # file, which SQLite writes at the checkpoint each last close makes.
                self._shard_engines.keep_open(conn_string)
            with engine.connect() as conn, conn.begin():
                yield conn

    def _initdb(self, engine: Engine, for_index_shard: bool = False) -> None:
        if for_index_shard:
            # Before its first table, or never without a VACUUM: a prune's freed pages can then
            # be given back (`retention`), and rows fill pages. No-ops once it has tables.
            db.event.listen(engine, "connect", _new_index_shard_pragmas)
        if not self._batching or for_index_shard:
            super()._initdb(engine, for_index_shard)
            return
        if is_stamped(engine):
            return
        path, stock = engine.url.database, super()._initdb
        if path and path != ":memory:" and self._shard_template.create(path, stock):
            return
        stock(engine)

    def wipe(self) -> None:
        super().wipe()  # run shards deleted; the index shard (the one held open) emptied
        self._shard_engines.forget()

    def dispose(self) -> None:
        super().dispose()
        self._shard_engines.forget()

    def _forget_buffer_after_fork(self) -> None:
        super()._forget_buffer_after_fork()
        # The shard engines need nothing here: none holds a connection across a fork, and
        # their own fork handlers (`sqlite_shards`) start the child afresh.
        self._shard_template.forget()

    # A run's shard keeps a sample of its asset events (`lean_writes`); the index shard has
    # them all, by run id too (`idx_events_by_run_id`). The run reads that ask for those kinds
    # only are answered from there, so they hold every event, as on a stock home; a read of
    # the whole log (the run page) gets the sample and its notes.
    def run_connection(self, run_id: str | None = None) -> Any:
        if getattr(self._run_reads, "from_index", False):
            return self.index_connection()
        return super().run_connection(run_id)

    @contextmanager
    def _run_read_from_index(self) -> Iterator[None]:
        self._run_reads.from_index = True
        try:
            yield
        finally:
            self._run_reads.from_index = False

    def _sampled_only(self, of_type: Any) -> bool:
        """Whether a run read of `of_type` asks only for kinds the run's shard samples."""
        if self.lean_writes.run_log_asset_events is None or not self._batching or not of_type:
            return False
        kinds = {of_type} if isinstance(of_type, DagsterEventType) else set(of_type)
        return all(kind.value in SAMPLED_TYPES for kind in kinds)

    def get_records_for_run(
        self,
        run_id: str,
        cursor: str | None = None,
        of_type: DagsterEventType | set[DagsterEventType] | None = None,
        limit: int | None = None,
        ascending: bool = True,
    ) -> EventLogConnection:
        if not self._sampled_only(of_type):
            return super().get_records_for_run(run_id, cursor, of_type, limit, ascending)
        with self._run_read_from_index():
            return super().get_records_for_run(run_id, cursor, of_type, limit, ascending)

    def get_asset_partitions_for_run(
        self,
        run_id: str,
        of_type: DagsterEventType | set[DagsterEventType] | None = None,
    ) -> Mapping[dg.AssetKey, AbstractSet[str | None]]:
        found = super().get_asset_partitions_for_run(run_id, of_type)
        if self.lean_writes.run_log_asset_events is None or not self._batching:
            return found
        kinds = {of_type} if isinstance(of_type, DagsterEventType) else set(of_type or ())
        sampled = {kind for kind in kinds if kind.value in SAMPLED_TYPES} if kinds else None
        if sampled is None:
            sampled = {DagsterEventType(kind) for kind in SAMPLED_TYPES}
        if not sampled:
            return found
        with self._run_read_from_index():
            indexed = super().get_asset_partitions_for_run(run_id, sampled)
        merged = {key: set(partitions) for key, partitions in found.items()}
        for key, partitions in indexed.items():
            merged.setdefault(key, set()).update(partitions)
        return merged

    def _write_rows(
        self,
        events: Sequence[EventLogEntry],
        rows: Sequence[Row],
        planned_since: int | None = None,
    ) -> None:
        # One transaction per run shard (its log's sample of them: `lean_writes`), then one in
        # the index shard. `planned_since`: rows a run's planned rows behind its start, each
        # dropped where a row since that id supersedes it (`planned_behind`).
        lean = self.lean_writes
        for run_id, (run_events, run_rows) in rows_by_run(events, rows).items():
            kept = self._run_log_sample.rows(run_id, run_events, run_rows, self._event_to_row)
            if kept:
                # Compact as in the index: each kept asset event 2.1 KB -> ~150 bytes, a run
                # shard of 100 per (asset, kind) 3.35 MB -> 0.5 MB (a refresh writes one per run).
                write_run_shard(self, run_id, lean.index_rows(kept))
        index_rows = lean.index_rows(rows)
        after_insert: AfterInsert | None = (
            delete_superseded_planned if lean.delete_superseded_planned else None
        )
        if planned_since is not None:
            since, older_too = planned_since, lean.delete_superseded_planned

            def drop(conn: Connection, rows: Sequence[Row], ids: Sequence[int]) -> None:
                drop_superseded(conn, ids, since, older_too=older_too)

            after_insert = drop
        write_index_shard(self, events, index_rows, after_insert)

    def _planned_rows_before_run(self) -> int | None:
        return self.lean_writes.planned_rows_before_run if self._batching else None

    def _planned_since(self) -> int:
        with self.index_connection() as conn:
            return int(conn.execute(MAX_EVENT_ID).scalar() or 0)

    def _write_planned_behind(
        self, events: Sequence[EventLogEntry], rows: Sequence[Row], since: int
    ) -> None:
        # Not under the buffer's lock, which every read and write of this process takes: the
        # run's own start would wait for every chunk (it did, 13 s at 100,000 tasks). Events
        # this process has not written yet come after the chunk, as on a stock home.
        self._write_rows(events, rows, planned_since=since)
