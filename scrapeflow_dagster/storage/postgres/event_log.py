"""dagster-postgres's event log storage, with a process's asset events written in batches.

Configure it in `$DAGSTER_HOME/dagster.yaml` (`scrapeflow home init --postgres URL` writes it,
with Postgres run and schedule storage beside it)::

    event_log_storage:
      module: scrapeflow_dagster.storage.postgres.event_log
      class: BatchedPostgresEventLogStorage
      config:
        postgres_url: postgresql+psycopg2://user:password@host:5432/dagster

Every key of dagster-postgres's config (`postgres_db`, `should_autocreate_tables`, ...) works,
plus `max_buffered_events` and `max_buffer_seconds` (`buffer`).

Stock dagster-postgres opens a new connection per event (NullPool), sends a NOTIFY and commits
up to twice per asset event, ~21 ms per event on a small machine. Here:

- a run's materialisations, observations and planned materialisations wait in the process's
  buffer (`buffer`: when it is flushed) and are written one transaction per batch
  (`postgres_write`);
- every other event is written the same way as a batch of one, so all event rows are inserted
  under the same advisory lock and their ids commit in order across processes;
- connections come from a small pool (one kept open per process, more while threads need them),
  checked before use so a restarted server costs one reconnect, not an error.

A process killed with SIGKILL loses at most its buffered events; a batch is one transaction, so
it lands whole or not at all.
ASSET_FAILED_TO_MATERIALIZE events never reach this storage: dagster-postgres 0.29.27 keeps
`can_store_asset_failure_events` False (only Dagster+ storages store them), so the instance
drops them; a partition's FAILED state comes from its planned event and its run's status.
On a dagster, dagster-webserver or dagster-postgres other than the ones this was written against,
it stores events exactly as stock dagster-postgres does, with its NullPool (`version_guard`).
"""

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as db
from dagster._core.events import ASSET_CHECK_EVENTS
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.config import pg_config
from dagster._serdes import ConfigurableClassData

try:
    from dagster_postgres.event_log.event_log import PostgresEventLogStorage
except ImportError as exc:  # the embedded default installs no Postgres backend
    raise ImportError(
        "this Dagster home keeps its events in Postgres, but dagster-postgres is not "
        "installed: `pip install 'scrapeflow-dagster[postgres]'`"
    ) from exc
from dagster_postgres.utils import (
    create_pg_engine,
    get_token_provider_from_config,
    pg_url_from_config,
)
from sqlalchemy.engine import Connection

from scrapeflow_dagster.storage.batches.bodies import install as install_body_reader
from scrapeflow_dagster.storage.batches.buffer import BufferedEventLog
from scrapeflow_dagster.storage.batches.buffered_events import (
    DEFAULT_MAX_BUFFER_SECONDS,
    DEFAULT_MAX_BUFFERED_EVENTS,
    RUN_END_TYPES,
    buffer_config_fields,
    is_buffered,
)
from scrapeflow_dagster.storage.batches.lean_writes import (
    OBSERVATION_TYPE,
    POSTGRES_LEAN_WRITES,
    delete_superseded_planned,
    lean_writes_config_field,
    lean_writes_from_config,
)
from scrapeflow_dagster.storage.batches.write import MATERIALIZATION_TYPE, MAX_EVENT_ID
from scrapeflow_dagster.storage.dagster_internals.version_guard import (
    POSTGRES_PACKAGES,
    supports_installed_versions,
)
from scrapeflow_dagster.storage.planned.behind import drop_superseded
from scrapeflow_dagster.storage.planned.paced import Progress
from scrapeflow_dagster.storage.planned.rows import Row
from scrapeflow_dagster.storage.postgres.vacuum import DeletedRowsVacuum, GrowthAnalyze
from scrapeflow_dagster.storage.postgres.write import write_events
from scrapeflow_dagster.storage.retention.prune import (
    delete_superseded_at_write,
    policy_from_config,
    retention_config_field,
)


def _is_asset_failure(event: EventLogEntry) -> bool:
    return event.dagster_event is not None and event.dagster_event.is_asset_failed_to_materialize


# What a run did to an asset since the last read (`planned_paced`): through the
# `(run_id, id)` index, only the run's rows since then.
_RUN_PROGRESS = db.text(
    f"""
SELECT partition, dagster_event_type FROM event_logs
WHERE run_id = :run_id AND id > :after AND id <= :upto AND asset_key = :asset_key
  AND dagster_event_type IN ('{MATERIALIZATION_TYPE}', '{OBSERVATION_TYPE}')
"""
)
_RUN_KEPT = db.text("SELECT 1 FROM event_logs WHERE run_id = :run_id LIMIT 1")
_RUN_ENDED = db.text(
    f"""
SELECT 1 FROM event_logs
WHERE dagster_event_type IN ({", ".join(f"'{kind}'" for kind in sorted(RUN_END_TYPES))})
  AND id > :since AND run_id = :run_id
LIMIT 1
"""
)

# One connection kept per process; the overflow serves threads reading at the same time.
POOL_SIZE = 1
POOL_MAX_OVERFLOW = 8
POOL_RECYCLE_SECONDS = 3600


class BatchedPostgresEventLogStorage(BufferedEventLog, PostgresEventLogStorage):
    """Postgres event log storage writing a process's asset events in batches (see the module)."""

    def __init__(
        self,
        postgres_url: str,
        should_autocreate_tables: bool = True,
        inst_data: ConfigurableClassData | None = None,
        token_provider: Any = None,
        *,
        max_buffered_events: int = DEFAULT_MAX_BUFFERED_EVENTS,
        max_buffer_seconds: float = DEFAULT_MAX_BUFFER_SECONDS,
        retention: Mapping[str, Any] | None = None,
        lean_writes: Mapping[str, Any] | None = None,
    ):
        """Args:
        postgres_url: a SQLAlchemy URL (`postgresql+psycopg2://...`), as for the stock storage.
        should_autocreate_tables: create the tables when missing, as the stock storage does.
        inst_data: set by Dagster when the storage comes from `dagster.yaml`.
        token_provider: dagster-postgres's cloud auth token provider (from its config).
        max_buffered_events: flush when this many events wait; 0 stores every event at once.
        max_buffer_seconds: flush when an event arrives and the oldest waiting is this old.
        retention: the home's `retention` block (`retention`); None: nothing is pruned.
        lean_writes: the `lean_writes` block (`lean_writes`; one table holds a run's log and
            the asset events, so `run_log_asset_events` does not apply); None: defaults
            (`POSTGRES_LEAN_WRITES`: bodies compact, superseded planned rows deleted and
            their space vacuumed while writing, planned rows past the first 1,000 per asset
            written as far ahead of the run's progress: `planned_paced`).
        """
        self.retention_policy = policy_from_config(retention)
        self.lean_writes = lean_writes_from_config(lean_writes, POSTGRES_LEAN_WRITES)
        install_body_reader()  # whatever writes, a home's compact bodies read as JSON
        self._init_buffer(
            max_buffered_events=max_buffered_events,
            max_buffer_seconds=max_buffer_seconds,
            batching=supports_installed_versions(POSTGRES_PACKAGES),
        )
        super().__init__(
            postgres_url,
            should_autocreate_tables,
            inst_data=inst_data,
            token_provider=token_provider,
        )
        if self._batching:
            self._engine.dispose()
            self._engine = create_pg_engine(
                self.postgres_url,
                self._token_provider,
                isolation_level="AUTOCOMMIT",
                pool_size=POOL_SIZE,
                max_overflow=POOL_MAX_OVERFLOW,
                pool_recycle=POOL_RECYCLE_SECONDS,
                pool_pre_ping=True,
            )
        self._statistics = GrowthAnalyze(self._engine)
        vacuum_after = self.lean_writes.vacuum_after_deleted
        policy = self.retention_policy
        # The policy when runs' writes delete what they supersede (`retention.at_write`).
        self._at_write = policy if policy is not None and policy.at_write else None
        self._vacuum = (
            DeletedRowsVacuum(self._engine, vacuum_after)
            if self._batching
            and vacuum_after
            and (self.lean_writes.delete_superseded_planned or self._at_write is not None)
            else None
        )

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        return {
            **pg_config(),  # type: ignore[dict-item]
            **buffer_config_fields(),
            "retention": retention_config_field(),
            "lean_writes": lean_writes_config_field(POSTGRES_LEAN_WRITES),
        }

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> "BatchedPostgresEventLogStorage":
        return cls(
            pg_url_from_config(config_value),
            config_value.get("should_autocreate_tables", True),
            inst_data=inst_data,
            token_provider=get_token_provider_from_config(config_value),
            max_buffered_events=config_value.get(
                "max_buffered_events", DEFAULT_MAX_BUFFERED_EVENTS
            ),
            max_buffer_seconds=config_value.get("max_buffer_seconds", DEFAULT_MAX_BUFFER_SECONDS),
            retention=config_value.get("retention"),
            lean_writes=config_value.get("lean_writes"),
        )

    def store_event(self, event: EventLogEntry) -> None:
        if not self._batching or is_buffered(event):
            super().store_event(event)  # buffered, or stored by the stock storage
            return
        self._wait_at_run_ends([event])  # its planned rows left are written before it
        self.flush()
        (event_id,) = write_events(self, self._engine, [event])
        if event.dagster_event_type in ASSET_CHECK_EVENTS:
            # As stock: the check's own rows, after its event is committed.
            self.store_asset_check_event(event, event_id)

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        # As stock: a batch never stores ASSET_FAILED_TO_MATERIALIZE (this storage cannot).
        kept = [event for event in events if not _is_asset_failure(event)]
        if kept:
            super().store_event_batch(kept)

    def _write_rows(self, events: Sequence[EventLogEntry], rows: Sequence[Row]) -> None:
        lean, at_write = self.lean_writes, self._at_write
        if not lean.delete_superseded_planned and at_write is None:
            write_events(self, self._engine, events, lean.index_rows(rows))
            return
        deleted: list[int] = []

        def after_insert(conn: Connection, rows: Sequence[Row], event_ids: Sequence[int]) -> None:
            if lean.delete_superseded_planned:
                deleted.append(delete_superseded_planned(conn, rows, event_ids))
            # After the planned rows' delete, which may wait for a prune's: the at-write delete
            # locks rows but never waits (SKIP LOCKED), so no lock it takes is held while this
            # transaction waits for a prune that waits for it.
            if at_write is not None:
                deleted.append(delete_superseded_at_write(conn, rows, event_ids, at_write))

        write_events(self, self._engine, events, lean.index_rows(rows), after_insert)
        if self._vacuum is not None:  # committed: a VACUUM can now reclaim them
            self._vacuum.deleted(sum(deleted))

    def _planned_rows_before_run(self) -> int | None:
        return self.lean_writes.planned_rows_before_run if self._batching else None

    def _planned_lead(self) -> int | None:
        return self.lean_writes.planned_rows_before_run

    def _planned_since(self) -> int:
        with self._engine.connect() as conn:
            return int(conn.execute(MAX_EVENT_ID).scalar() or 0)

    def _write_planned_behind(
        self, events: Sequence[EventLogEntry], rows: Sequence[Row], since: int
    ) -> None:
        # Under the insert lock of every batched writer (`write_events`): no other process's
        # row comes between the chunk's check and its insert (`planned_behind`).
        lean, deleted = self.lean_writes, []

        def drop(conn: Connection, rows: Sequence[Row], event_ids: Sequence[int]) -> None:
            older_too = lean.delete_superseded_planned
            deleted.append(drop_superseded(conn, event_ids, since, older_too=older_too))

        rows = lean.index_rows(rows)
        self._statistics.refresh()  # the check's plan needs them (`GrowthAnalyze`)
        write_events(self, self._engine, events, rows, drop, asset_rows=False)
        if self._vacuum is not None:
            self._vacuum.deleted(sum(deleted))

    def _read_planned_progress(
        self, run_id: str, asset_key: str, after: int, since: int
    ) -> Progress:
        # Up to the newest id committed: batched writers commit ids in order (`write_events`),
        # so no row at or below it comes later. The run's end is looked for since `since`
        # whatever that order (a writer of a stock version takes no lock): a few rows through
        # the `(dagster_event_type, id)` index.
        with self._engine.connect() as conn:
            upto = int(conn.execute(MAX_EVENT_ID).scalar() or 0)
            found = conn.execute(
                _RUN_PROGRESS,
                {"run_id": run_id, "asset_key": asset_key, "after": after, "upto": upto},
            ).all()
            ended = conn.execute(_RUN_ENDED, {"run_id": run_id, "since": since}).first()
            kept = conn.execute(_RUN_KEPT, {"run_id": run_id}).first()
        return Progress(
            materialised=[key for key, kind in found if kind == MATERIALIZATION_TYPE and key],
            observed=[key for key, kind in found if kind == OBSERVATION_TYPE and key],
            ended=ended is not None,
            upto=upto,
            gone=kept is None,  # its first planned rows are there until the run is deleted
        )

    def dispose(self) -> None:
        super().dispose()
        if self._batching:
            # Our pool holds connections open, unlike stock's NullPool: give them back.
            self._engine.dispose()

    def _forget_buffer_after_fork(self) -> None:
        super()._forget_buffer_after_fork()
        # A forked child must not use the parent's sockets; it opens its own when needed.
        engine = getattr(self, "_engine", None)
        if engine is not None:
            engine.dispose(close=False)
        vacuum = getattr(self, "_vacuum", None)
        if vacuum is not None:
            vacuum.forget_after_fork()
        statistics = getattr(self, "_statistics", None)
        if statistics is not None:
            statistics.forget_after_fork()
