"""Dagster's SQLite event log storage, with a process's asset events written in batches.

Configure it in `$DAGSTER_HOME/dagster.yaml` (run and schedule storage keep their defaults,
the same files as `storage: sqlite:`)::

    event_log_storage:
      module: scrapeflow_dagster.storage.sqlite_batched
      class: BatchedSqliteEventLogStorage
      config:
        base_dir: /abs/home/history/runs/

Stock Dagster commits each materialisation and planned materialisation twice (run shard, then
index shard), ~11 ms per event on a small machine. Here they wait in a per-process buffer
(`buffer`: when it is flushed) and are written together (`batch_write`): one transaction per
run shard, then one in the index shard.

A process killed with SIGKILL loses at most its buffered events; each shard's part of a batch
is one transaction, so what is stored stays consistent (a kill between the two transactions
leaves events in the run shard only, as stock Dagster can for one event).

Runless events and every other event type are stored as stock Dagster stores them.
ASSET_FAILED_TO_MATERIALIZE events never reach an SQLite storage
(`can_store_asset_failure_events` is False: the instance drops them); a partition's FAILED
state comes from its planned event and its run's status, both kept as stock writes them.
On a Dagster or dagster-webserver other than the ones this was written against, nothing is
buffered (`version_guard`).
"""

from collections.abc import Sequence
from typing import Any, TypedDict

import dagster as dg
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
from dagster._serdes import ConfigurableClassData

from scrapeflow_dagster.storage.batch_write import rows_by_run, write_index_shard, write_run_shard
from scrapeflow_dagster.storage.buffer import (
    DEFAULT_MAX_BUFFER_SECONDS,
    DEFAULT_MAX_BUFFERED_EVENTS,
    BufferedEventLog,
    buffer_config_fields,
)
from scrapeflow_dagster.storage.planned import Row
from scrapeflow_dagster.storage.version_guard import SQLITE_PACKAGES, supports_installed_versions


class BatchedSqliteConfig(TypedDict):
    base_dir: str
    max_buffered_events: int
    max_buffer_seconds: float


class BatchedSqliteEventLogStorage(BufferedEventLog, SqliteEventLogStorage):
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
        self._init_buffer(
            max_buffered_events=max_buffered_events,
            max_buffer_seconds=max_buffer_seconds,
            batching=supports_installed_versions(SQLITE_PACKAGES),
        )
        super().__init__(base_dir, inst_data=inst_data)

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        return {"base_dir": dg.StringSource, **buffer_config_fields()}

    @classmethod
    def from_config_value(  # type: ignore[override]
        cls, inst_data: ConfigurableClassData | None, config_value: BatchedSqliteConfig
    ) -> "BatchedSqliteEventLogStorage":
        return cls(inst_data=inst_data, **config_value)

    def _write_rows(self, events: Sequence[EventLogEntry], rows: Sequence[Row]) -> None:
        # One transaction per run shard, then one in the index shard.
        for run_id, run_rows in rows_by_run(events, rows).items():
            write_run_shard(self, run_id, run_rows)
        write_index_shard(self, events, rows)
