"""Compact event bodies: an asset event's JSON stored deflated against a preset dictionary.

A materialisation's body is ~2.1-2.6 KB of JSON of which ~150 bytes are its own (partition,
run id, metadata values, timestamp, pid); the rest is Dagster's wrapping, the same in every
row. Deflate with the wrapping as its preset dictionary (`event_dictionary`) stores ~150 bytes
(base64, as the column is text on every backend): measured on a chain run's rows, 2,106 ->
152 bytes a materialisation, 841 -> 139 a planned one, 2,576 -> 147 an observation.

The stored form is `z1:` + base64 of a raw deflate stream; a body that does not start with it
is Dagster's JSON, read as it is. Decoding is hooked on the event column of Dagster's event log
table (`install`), so every read of it, whichever query selects it, gets the JSON Dagster
wrote: a SQLAlchemy type over the column's own (`LongText`) whose result processing inflates
compact values. Only the batched storages write compact bodies (`lean_writes.compact_bodies`);
`scrapeflow home expand` writes them back as JSON for a home that leaves scrapeflow.
"""

import base64
import functools
import threading
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as db
from dagster._core.storage.event_log.schema import SqlEventLogStorageTable
from dagster._core.storage.event_log.sqlite.sqlite_event_log import INDEX_SHARD_NAME
from dagster._core.storage.sql import LongText

from scrapeflow_dagster.storage.batches.body_dictionary import DICTIONARY_V1

PREFIX = "z1:"
_WBITS = -15  # a raw deflate stream: no zlib header or checksum (base64 of less)
_LEVEL = 6  # 1: a third larger; 9: 2% smaller, slower
_MEM_LEVEL = 8  # 9 gave the same bytes


# Deflate's state after the dictionary, copied per body: loading the dictionary anew each time
# cost about a fifth of a body's time. (The same bytes either way.)
_PRIMED = zlib.compressobj(
    _LEVEL, zlib.DEFLATED, _WBITS, _MEM_LEVEL, zlib.Z_DEFAULT_STRATEGY, DICTIONARY_V1
)


def compact(body: str) -> str:
    """`body` (an event's JSON) in compact form."""
    deflate = _PRIMED.copy()
    packed = deflate.compress(body.encode()) + deflate.flush()
    return PREFIX + base64.b64encode(packed).decode("ascii")


def expand(stored: str) -> str:
    """The JSON of a stored body, compact or not."""
    if not stored.startswith(PREFIX):
        return stored
    inflate = zlib.decompressobj(_WBITS, zdict=DICTIONARY_V1)
    return (inflate.decompress(base64.b64decode(stored[len(PREFIX) :])) + inflate.flush()).decode()


class EventBody(db.types.TypeDecorator):  # type: ignore[type-arg]
    """The event column's type (Dagster's `LongText`: its DDL, its binding), reading compact
    bodies as the JSON they hold."""

    impl = LongText
    cache_ok = True

    def process_result_value(self, value: Any, dialect: Any) -> Any:
        if isinstance(value, str) and value.startswith(PREFIX):
            return expand(value)
        return value


_install_lock = threading.Lock()


def install() -> None:
    """Make every read of Dagster's event column expand compact bodies (idempotent)."""
    column = SqlEventLogStorageTable.c.event
    with _install_lock:
        if not isinstance(column.type, EventBody):
            column.type = EventBody()


_COMPACT_CHUNK = db.text(
    "SELECT id, event FROM event_logs WHERE id > :after AND event LIKE :prefix"
    " ORDER BY id LIMIT :limit"
)
_REWRITE = db.text("UPDATE event_logs SET event = :event WHERE id = :id")


def expand_stored_bodies(storage: Any, *, chunk: int = 1000) -> int:
    """Write every compact body of `storage`'s event log back as JSON, `chunk` rows per
    transaction (a home that will be read without scrapeflow: stock storage in dagster.yaml):
    the asset index and, on SQLite, each run's shard (its log's sample keeps compact bodies
    too); returns how many rows were rewritten. The queries are text, so the column's reader
    does not expand what they select."""
    rewritten = 0
    for connect in _shard_connections(storage):
        rewritten += _expand_shard(connect, chunk)
    return rewritten


def _shard_connections(storage: Any) -> list[Callable[[], Any]]:
    """How to connect to each shard of `storage` that may hold compact bodies."""
    connections: list[Callable[[], Any]] = [storage.index_connection]
    path_for_shard = getattr(storage, "path_for_shard", None)
    if path_for_shard is None:  # Postgres: one database, the index is the run logs too
        return connections
    folder = Path(path_for_shard(INDEX_SHARD_NAME)).parent
    for shard in sorted(folder.glob("*.db")):
        # Not `stem`: events outside any run (run id "") are in the shard named `.db`.
        run_id = shard.name.removesuffix(".db")
        if run_id != INDEX_SHARD_NAME:
            connections.append(functools.partial(storage.run_connection, run_id))
    return connections


def _expand_shard(connect: Callable[[], Any], chunk: int) -> int:
    rewritten, after = 0, 0
    while True:
        with connect() as conn:
            found = conn.execute(
                _COMPACT_CHUNK, {"after": after, "prefix": PREFIX + "%", "limit": chunk}
            ).fetchall()
            if found:
                conn.execute(
                    _REWRITE, [{"id": row_id, "event": expand(body)} for row_id, body in found]
                )
        if not found:
            return rewritten
        rewritten += len(found)
        after = found[-1][0]
