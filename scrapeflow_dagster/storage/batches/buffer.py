"""The per-process buffer of asset events shared by the batched event log storages.

`BufferedEventLog` goes before a Dagster SQL event log storage in the bases of a class
(`class X(BufferedEventLog, SqliteEventLogStorage)`); the class writes a batch in
`_write_rows`. A run's planned events come as one event per asset naming its partitions and are
written as the rows of one event per partition (`planned`): all at once, or the first chunk
before the run starts and the rest behind it (`planned_behind`; on Postgres paced to the run's
progress, `planned_paced`). The buffer holds a run's
materialisations, observations and other planned materialisations (one of each per partition)
and is flushed:

- before any other event of the process is stored, so the order of a process's events holds;
- when it holds `max_buffered_events` events, or its oldest is `max_buffer_seconds` old (checked
  when an event arrives: an idle process writes its buffer at its next event, read or exit);
- at the end of `store_event_batch` (Dagster's batched planned events);
- before any read or write through the storage: every query of Dagster's SQL event log goes
  through `run_connection` or `index_connection`, so a read in this process sees every event
  this process stored;
- at `dispose()` and at interpreter exit (Dagster's step workers dispose their instance before
  they end, which matters where a child ends with `os._exit` and skips `atexit`).

A write that fails drops its batch and raises to whatever triggered the flush, as a failed
stock `store_event` raises to its caller. A forked child forgets its parent's buffer (the
parent writes it).
"""

import atexit
import itertools
import logging
import os
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any

from dagster._core.events.log import EventLogEntry

from scrapeflow_dagster.storage.batches.buffered_events import RUN_END_TYPES, is_buffered
from scrapeflow_dagster.storage.batches.templates import EventTemplates
from scrapeflow_dagster.storage.batches.write import (
    MATERIALIZATION_TYPE,
    PLANNED_TYPE,
    asset_key_string,
)
from scrapeflow_dagster.storage.dagster_internals.migration_scripts import keep_dagster_migrations
from scrapeflow_dagster.storage.dagster_internals.partition_keys import (
    Fingerprint,
    PartitionKeys,
    fingerprint,
    read_keys,
)
from scrapeflow_dagster.storage.dagster_internals.record_constructors import compile_run_records
from scrapeflow_dagster.storage.planned.behind import BEHIND_CHUNK_ROWS, PlannedBehind
from scrapeflow_dagster.storage.planned.paced import Progress, run_paced, write_paced
from scrapeflow_dagster.storage.planned.rows import PlannedTemplate, Row, is_planned_subset

logger = logging.getLogger(__name__)

# Any process that loads a batched storage, or the definitions (whose executor assets log
# through this buffer), opens Dagster's databases next: from here on it reads Dagster's
# migration scripts once. (Here, not in the package: `python -m ...version_guard` runs that
# module as `__main__` after the package is imported.)
keep_dagster_migrations()
# A process that may create runs (the CLI, the daemon, the webserver) keeps no run's planned
# events alive through a record constructor compiled in their frame (record_constructors).
compile_run_records()


class BufferedEventLog:
    """Mixin buffering a process's asset events before a Dagster SQL event log (see module)."""

    _buffer: list[EventLogEntry]

    def _init_buffer(
        self, *, max_buffered_events: int, max_buffer_seconds: float, batching: bool
    ) -> None:
        """Set up the buffer; call before the storage's own `__init__`.

        Args:
            max_buffered_events: flush when this many events wait; 0 stores every event at once.
            max_buffer_seconds: flush when an event arrives and the oldest waiting is this old.
            batching: False stores every event as the stock storage does (the version guard).
        """
        self._max_buffered_events = max_buffered_events
        self._max_buffer_seconds = max_buffer_seconds
        self._batching = max_buffered_events > 0 and batching
        self._buffer = []
        self._oldest_buffered: float | None = None
        self._buffer_lock = threading.RLock()
        self._event_templates = EventTemplates()
        self._unflushed = threading.local()  # `unflushed`: this thread's writes skip the flush
        self._planned_behind = PlannedBehind()
        self._partition_keys = PartitionKeys()  # `partition_keys`: read again once changed
        _live_storages.add(self)

    def _write_rows(self, events: Sequence[EventLogEntry], rows: Sequence[Row]) -> None:
        """Write `events` (in order) with their event `rows` as the stock storage would, in
        batches."""
        raise NotImplementedError

    def _planned_rows_before_run(self) -> int | None:
        """Planned rows per asset written before a run starts, the rest behind it; None: all
        before (a storage that writes behind overrides this and the two below)."""
        return None

    def _planned_since(self) -> int:
        """The newest event id of the asset index, once a run's first planned rows are in."""
        raise NotImplementedError

    def _write_planned_behind(
        self, events: Sequence[EventLogEntry], rows: Sequence[Row], since: int
    ) -> None:
        """Write a chunk of a run's planned rows behind its start (`planned_behind`)."""
        raise NotImplementedError

    def _write_buffered(self, events: Sequence[EventLogEntry]) -> None:
        self._write_rows(events, [self._buffered_row(event) for event in events])

    def _buffered_row(self, event: EventLogEntry) -> Row:
        """The row Dagster's `_event_to_row` makes of `event`, a (planned) materialisation's
        text from a template (`event_template`: the same text, a tenth of the cost)."""
        dagster_event = event.dagster_event
        # `event_type_value`, not `event_type` (an enum member built on each call).
        kind = dagster_event.event_type_value if dagster_event is not None else None
        if kind == MATERIALIZATION_TYPE:
            data = dagster_event.event_specific_data.materialization  # type: ignore[union-attr]
        elif kind == PLANNED_TYPE:
            data = dagster_event.event_specific_data  # type: ignore[union-attr]
        else:
            return self._event_to_row(event)  # type: ignore[attr-defined, no-any-return]
        # As `dagster_event.asset_key` and `.partition` read them for these two types.
        asset_key, partition = data.asset_key, data.partition
        return {
            "run_id": event.run_id,
            "event": self._event_templates.serialize(event),
            "dagster_event_type": kind,
            "timestamp": self._event_insert_timestamp(event),  # type: ignore[attr-defined]
            "step_key": dagster_event.step_key,  # type: ignore[union-attr]
            "asset_key": asset_key_string(asset_key) if asset_key else None,
            "partition": partition or None,
        }

    @property
    def supports_partition_subset_in_asset_materialization_planned_events(self) -> bool:
        # Dagster then sends a run's planned events as one per asset (`planned`).
        return self._batching

    def _planned_lead(self) -> int | None:
        """How far ahead of a run's progress its planned rows past the first ones are written
        (`planned_paced`); None: behind its start, as fast as they go (`planned_behind`)."""
        return None

    def _read_planned_progress(
        self, run_id: str, asset_key: str, after: int, since: int
    ) -> Progress:
        """What run `run_id` did to `asset_key` (as stored) after event id `after`, and
        whether it ended (after event id `since`)."""
        raise NotImplementedError

    def _store_planned_subset(self, event: EventLogEntry) -> None:
        before_run = self._planned_rows_before_run()
        template = PlannedTemplate(self, event)  # type: ignore[arg-type]
        # A transaction per chunk of partitions (stock Dagster commits each one alone).
        chunk = None if before_run is None else min(before_run, BEHIND_CHUNK_ROWS)
        with self._buffer_lock:
            self.flush()  # what came before it is written before it
            first = template.keys if before_run is None else template.keys[:before_run]
            for events, rows in template.chunks(first, chunk=chunk):
                self._write_rows(events, rows)
            if before_run is None or len(template.keys) <= before_run:
                return
            since = self._planned_since()

        def write(events: list[EventLogEntry], rows: list[Row]) -> None:
            self._write_planned_behind(events, rows, since)

        run_id, lead = event.run_id, self._planned_lead()
        if lead is None:
            rest = itertools.islice(template.keys, before_run, None)
            self._planned_behind.start(run_id, template.chunks(rest, chunk=chunk), write)
            return
        asset_key = asset_key_string(template.asset_key)

        def paced(finish: threading.Event, discard: threading.Event) -> None:
            run_paced(
                run_id,
                lambda: write_paced(
                    template,
                    before_run,
                    lead=lead,
                    chunk=min(lead, BEHIND_CHUNK_ROWS),
                    read_progress=lambda after: self._read_planned_progress(
                        run_id, asset_key, after, since
                    ),
                    write=write,
                    since=since,
                    finish=finish,
                    discard=discard,
                ),
            )

        self._planned_behind.start_paced(run_id, paced)

    def _wait_at_run_ends(self, events: Sequence[EventLogEntry]) -> None:
        for event in events:
            dagster_event = event.dagster_event
            if dagster_event is not None and dagster_event.event_type_value in RUN_END_TYPES:
                self._planned_behind.wait(event.run_id)

    @property
    def buffered_event_count(self) -> int:
        """How many events of this process wait to be written."""
        return len(self._buffer)

    def store_event(self, event: EventLogEntry) -> None:
        self._wait_at_run_ends([event])
        if self._batching and is_planned_subset(event):
            self._store_planned_subset(event)
            return
        if not (self._batching and is_buffered(event)):
            self.flush()
            super().store_event(event)  # type: ignore[misc]
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
        self._wait_at_run_ends(events)
        if not self._batching:
            super().store_event_batch(events)  # type: ignore[misc]
            return
        with self._buffer_lock:
            for event in events:
                if is_buffered(event) and not is_planned_subset(event):
                    self._buffer.append(event)
                else:
                    self.store_event(event)
            self.flush()

    def flush(self) -> None:
        """Write the buffered events now (`_write_buffered`)."""
        with self._buffer_lock:
            if not self._buffer:
                return
            events, self._buffer = self._buffer, []
            self._oldest_buffered = None
            started = time.perf_counter()
            self._write_buffered(events)
            logger.debug(
                "wrote %d asset events in %.1f ms",
                len(events),
                1e3 * (time.perf_counter() - started),
            )

    # Every query of Dagster's SQL event log opens one of these two: the read hook.
    def run_connection(self, run_id: str | None = None) -> Any:
        if not getattr(self._unflushed, "on", False):
            self.flush()
        return super().run_connection(run_id)  # type: ignore[misc]

    def index_connection(self) -> Any:
        if not getattr(self._unflushed, "on", False):
            self.flush()
        return super().index_connection()  # type: ignore[misc]

    def get_dynamic_partitions(self, partitions_def_name: str) -> Sequence[str]:
        stock = super().get_dynamic_partitions  # type: ignore[misc]
        if not self._batching:
            return stock(partitions_def_name)  # type: ignore[no-any-return]
        self._check_partitions_table()  # type: ignore[attr-defined]

        def current() -> Fingerprint:
            with self.index_connection() as conn:
                return fingerprint(conn, partitions_def_name)

        def load() -> list[str]:
            with self.index_connection() as conn:
                return read_keys(conn, partitions_def_name)

        return self._partition_keys.get(partitions_def_name, current, load)

    def add_dynamic_partitions(
        self, partitions_def_name: str, partition_keys: Sequence[str]
    ) -> None:
        # A partition row refers to no event, and what the storage reads here (the keys that
        # exist) no buffered event changes: the buffer waits. A crawl streamed through one run
        # adds partitions every few pages; a flush for each would cut its batches to a few
        # events each.
        self._unflushed.on = True
        try:
            super().add_dynamic_partitions(partitions_def_name, partition_keys)  # type: ignore[misc]
        finally:
            self._unflushed.on = False

    def delete_events(self, run_id: str) -> None:
        self._planned_behind.discard(run_id)  # no planned row of it written after this
        self.flush()
        super().delete_events(run_id)  # type: ignore[misc]

    def wipe(self) -> None:
        self._planned_behind.wait(discard=True)  # every run's rows are about to go
        self.flush()
        super().wipe()  # type: ignore[misc]

    def dispose(self) -> None:
        self._planned_behind.wait()
        self.flush()
        super().dispose()  # type: ignore[misc]

    def _forget_buffer_after_fork(self) -> None:
        # The parent process still holds (and will write) what was buffered before the fork.
        self._buffer = []
        self._oldest_buffered = None
        self._buffer_lock = threading.RLock()
        self._planned_behind.forget()


_live_storages: "weakref.WeakSet[BufferedEventLog]" = weakref.WeakSet()


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
