"""A process's copy of each dynamic partitions definition's keys, read again only once the
table has changed.

Dagster reads every key of a dynamic partitions definition for each range it resolves: three
times as `dagster asset materialize` creates a million-task run (~3 s and ~100 MB of new
strings each, measured 2026-11-28), and again in sensors and the UI. The batched storages keep
the last list read per definition with a fingerprint of its rows, and read the keys again only
when the fingerprint differs. The fingerprint is the row count, the newest id and that row's
key: adding a key raises the newest id (Postgres's ids never come back; SQLite gives the next
key the highest id plus one, so a deleted newest id comes back only to a key added after it,
whose text then differs unless it is the same key), deleting one lowers the count.

The copy costs the keys' memory for as long as the process lives (a webserver, the daemon):
about 100 MB at a million keys, which each read allocated anew before.
"""

import threading
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as db
from dagster._core.storage.event_log.schema import DynamicPartitionsTable

Fingerprint = tuple[int, int | None, str | None]

_TABLE = DynamicPartitionsTable


def fingerprint(conn: Any, partitions_def_name: str) -> Fingerprint:
    """The row count, newest id and its key of `partitions_def_name`'s keys, on `conn`."""
    count, newest = conn.execute(
        db.select(db.func.count(), db.func.max(_TABLE.c.id)).where(
            _TABLE.c.partitions_def_name == partitions_def_name
        )
    ).one()
    key = None
    if newest is not None:
        key = conn.execute(db.select(_TABLE.c.partition).where(_TABLE.c.id == newest)).scalar()
    return int(count), newest, key


def read_keys(conn: Any, partitions_def_name: str) -> list[str]:
    """The keys of `partitions_def_name` in id order, as Dagster's `get_dynamic_partitions`
    reads them, but taken from the cursor a row at a time: Dagster's `fetchall` first holds a
    row object per key beside the keys (measured 2026-11-28: ~230 bytes per key at the peak of
    the process creating a run, freed right after)."""
    query = (
        db.select(_TABLE.c.partition)
        .where(_TABLE.c.partitions_def_name == partitions_def_name)
        .order_by(_TABLE.c.id)
    )
    return list(conn.execute(query).scalars())


class PartitionKeys:
    """The last keys read per definition, with the fingerprint read just before them."""

    def __init__(self) -> None:
        self._read: dict[str, tuple[Fingerprint, list[str]]] = {}
        self._lock = threading.Lock()

    def get(
        self,
        partitions_def_name: str,
        current: Callable[[], Fingerprint],
        load: Callable[[], Sequence[str]],
    ) -> list[str]:
        """The keys of `partitions_def_name` in id order (a new list each call: callers may
        change theirs): the copy when `current()` matches its fingerprint, else `load()`.

        The fingerprint is read before the keys: a key added in between makes the next call
        read them again, never keep a list without it.
        """
        now = current()
        with self._lock:
            kept = self._read.get(partitions_def_name)
        if kept is not None and kept[0] == now:
            return list(kept[1])
        keys = list(load())
        with self._lock:
            self._read[partitions_def_name] = (now, keys)
        return list(keys)

    def forget(self, partitions_def_name: str | None = None) -> None:
        """Drop the copy of `partitions_def_name` (None: every one)."""
        with self._lock:
            if partitions_def_name is None:
                self._read.clear()
            else:
                self._read.pop(partitions_def_name, None)
