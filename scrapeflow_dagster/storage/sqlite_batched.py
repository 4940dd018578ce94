"""Dagster's SQLite event log storage, with a process's asset events written in batches.

Configure it in `$DAGSTER_HOME/dagster.yaml` (run and schedule storage keep their defaults,
the same files as `storage: sqlite:`)::

    event_log_storage:
      module: scrapeflow_dagster.storage.sqlite_batched
      class: BatchedSqliteEventLogStorage
      config:
        base_dir: /abs/home/history/runs/

Stock Dagster commits each materialisation and planned materialisation twice (run shard, then
index shard), ~11 ms per event on a small machine. Here they wait in a per-process buffer and
are written together (`batch_write`). The buffer is flushed:

- before any other event of the process is stored, so the order of a process's events holds;
- when it holds `max_buffered_events` events, or its oldest is `max_buffer_seconds` old (checked
  when an event arrives: an idle process writes its buffer at its next event, read or exit);
- at the end of `store_event_batch` (Dagster's batched planned events);
- before any read or write through this storage: every query of Dagster's SQL event log goes
  through `run_connection` or `index_connection`, so a read in this process sees every event
  this process stored;
- at `dispose()` and at interpreter exit (Dagster's step workers dispose their instance before
  they end, which matters where a child ends with `os._exit` and skips `atexit`).

A write that fails drops its batch and raises to whatever triggered the flush, as a failed
stock `store_event` raises to its caller.

A process killed with SIGKILL loses at most its buffered events; each shard's part of a batch
is one transaction, so what is stored stays consistent (a kill between the two transactions
leaves events in the run shard only, as stock Dagster can for one event).

Runless events and every other event type are stored as stock Dagster stores them.
ASSET_FAILED_TO_MATERIALIZE events never reach an SQLite storage
(`can_store_asset_failure_events` is False: the instance drops them); a partition's FAILED
state comes from its planned event and its run's status, both kept as stock writes them.
On a Dagster other than the one this was written against, nothing is buffered (`version_guard`).
"""

import atexit
import logging
import os
import threading
import time
import weakref
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, TypedDict

import dagster as dg
from dagster._core.events import DagsterEventType
from dagster._core.events.log import EventLogEntry
from dagster._core.instance import RUNLESS_RUN_ID
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
from dagster._serdes import ConfigurableClassData
from sqlalchemy.engine import Connection

from scrapeflow_dagster.storage.batch_write import rows_by_run, write_index_shard, write_run_shard
from scrapeflow_dagster.storage.version_guard import supports_dagster_version

DEFAULT_MAX_BUFFERED_EVENTS = 1000
DEFAULT_MAX_BUFFER_SECONDS = 5.0
# One of each per partition in a run: the events worth batching.
BUFFERED_EVENT_TYPES = frozenset(
    {DagsterEventType.ASSET_MATERIALIZATION, DagsterEventType.ASSET_MATERIALIZATION_PLANNED}
)

logger = logging.getLogger(__name__)


class BatchedSqliteConfig(TypedDict):
    base_dir: str
    max_buffered_events: int
    max_buffer_seconds: float


def is_buffered(event: EventLogEntry) -> bool:
    """Whether `event` may wait in the buffer: a run's materialisation or planned one."""
    dagster_event = event.dagster_event
    return (
        dagster_event is not None
        and dagster_event.event_type in BUFFERED_EVENT_TYPES
        and dagster_event.asset_key is not None
        and event.run_id != RUNLESS_RUN_ID
    )


class BatchedSqliteEventLogStorage(SqliteEventLogStorage):
    """SQLite event log storage writing a process's asset events in batches (see the module)."""

    def __init__(
        self,
        base_dir: str,
        inst_data: ConfigurableClassData | None = None,
        *,
        max_buffered_events: int = DEFAULT_MAX_BUFFERED_EVENTS,
        max_buffer_seconds: float = DEFAULT_MAX_BUFFER_SECONDS,
    ):
        """Args:
        base_dir: the folder of the run shards and `index.db`, as for SqliteEventLogStorage.
        inst_data: set by Dagster when the storage comes from `dagster.yaml`.
        max_buffered_events: flush when this many events wait; 0 stores every event at once.
        max_buffer_seconds: flush when an event arrives and the oldest waiting is this old.
        """
        self._max_buffered_events = max_buffered_events
        self._max_buffer_seconds = max_buffer_seconds
        self._batching = max_buffered_events > 0 and supports_dagster_version()
        self._buffer: list[EventLogEntry] = []
        self._oldest_buffered: float | None = None
        self._buffer_lock = threading.RLock()
        super().__init__(base_dir, inst_data=inst_data)
        _live_storages.add(self)

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        return {
            "base_dir": dg.StringSource,
            "max_buffered_events": dg.Field(
                dg.IntSource,
                is_required=False,
                default_value=DEFAULT_MAX_BUFFERED_EVENTS,
                description="Flush a process's asset events when this many wait (0: no buffer).",
            ),
            "max_buffer_seconds": dg.Field(
                float,
                is_required=False,
                default_value=DEFAULT_MAX_BUFFER_SECONDS,
                description="Flush when an event arrives and the oldest waiting is this old.",
            ),
        }

    @classmethod
    def from_config_value(  # type: ignore[override]
        cls, inst_data: ConfigurableClassData | None, config_value: BatchedSqliteConfig
    ) -> "BatchedSqliteEventLogStorage":
        return cls(inst_data=inst_data, **config_value)

    @property
    def buffered_event_count(self) -> int:
        """How many events of this process wait to be written."""
        return len(self._buffer)

    def store_event(self, event: EventLogEntry) -> None:
        if not (self._batching and is_buffered(event)):
            self.flush()
            super().store_event(event)
            return
        with self._buffer_lock:
            self._buffer.append(event)
            now = time.monotonic()
            if self._oldest_buffered is None:
                self._oldest_buffered = now
            if (
                len(self._buffer) >= self._max_buffered_events
                or now - self._oldest_buffered >= self._max_buffer_seconds
            ):
                self.flush()

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        if not self._batching:
            super().store_event_batch(events)
            return
        with self._buffer_lock:
            for event in events:
                if is_buffered(event):
                    self._buffer.append(event)
                else:
                    self.store_event(event)
            self.flush()

    def flush(self) -> None:
        """Write the buffered events: one transaction per run shard, one in the index shard."""
        with self._buffer_lock:
            if not self._buffer:
                return
            events, self._buffer = self._buffer, []
            self._oldest_buffered = None
            started = time.perf_counter()
            rows = [self._event_to_row(event) for event in events]
            for run_id, run_rows in rows_by_run(events, rows).items():
                write_run_shard(self, run_id, run_rows)
            write_index_shard(self, events, rows)
            logger.debug(
                "wrote %d asset events in %.1f ms",
                len(events),
                1e3 * (time.perf_counter() - started),
            )

    # Every query of Dagster's SQL event log opens one of these two: the read hook.
    def run_connection(self, run_id: str | None = None) -> Any:
        self.flush()
        return super().run_connection(run_id)

    def index_connection(self) -> AbstractContextManager[Connection]:
        self.flush()
        return super().index_connection()

    def wipe(self) -> None:
        self.flush()
        super().wipe()

    def dispose(self) -> None:
        self.flush()
        super().dispose()

    def _forget_buffer_after_fork(self) -> None:
        # The parent process still holds (and will write) what was buffered before the fork.
        self._buffer = []
        self._oldest_buffered = None
        self._buffer_lock = threading.RLock()


_live_storages: "weakref.WeakSet[BatchedSqliteEventLogStorage]" = weakref.WeakSet()


def _flush_live_storages() -> None:
    for storage in list(_live_storages):
        try:
            storage.flush()
        except Exception:
            logger.exception("could not write the buffered asset events at exit")


def _after_fork_in_child() -> None:
    for storage in list(_live_storages):
        storage._forget_buffer_after_fork()


atexit.register(_flush_live_storages)
os.register_at_fork(after_in_child=_after_fork_in_child)
