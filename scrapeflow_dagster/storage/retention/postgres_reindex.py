"""Rebuild the Postgres event log's bloated indexes after a prune (`REINDEX ... CONCURRENTLY`).

A chain run on Postgres writes a planned row per (asset, partition) before it starts and
deletes it as the partition is materialised; a failed partition's planned row stays (it says
FAILED). VACUUM frees the deleted rows' index entries but not their pages: each page keeps a
failed partition's entry, so none empties and the indexes keep the planned rows' size. After
one chain run of 5,000 tasks (one in 30 a 404) the database held 3.29 KB per task; a
`REINDEX TABLE CONCURRENTLY event_logs` took 0.08 s and left 2.45 KB (the five B-tree indexes
1.35-2.2x the size a rebuild gives them; measured 2026-11-29).

So retention's VACUUM (`retention_backends.PostgresBackend.reclaim`) is followed by a rebuild
of each index whose size is at least `BLOAT_RATIO` times what its entries need and that
wastes at least `MIN_WASTE_BYTES`. What they need is estimated as the usual bloat queries do
(without the `pgstattuple` extension): the index's entries (`reltuples`, which VACUUM sets)
times an entry's bytes (header, key columns' average widths from `pg_stats`, which ANALYZE
sets, line pointer) over the leaf pages' fill factor. The estimate lands within a few percent
of a freshly built index's size for Dagster's indexes; indexes with many equal keys (B-tree
deduplication) come out smaller than it, and are never rebuilt.

`REINDEX INDEX CONCURRENTLY` builds the new index beside the old while runs insert and
delete, then swaps them; it waits for transactions that started before it, never blocks a
writer, and conflicts only with VACUUM, ANALYZE and DDL on the table. Prunes rebuild one at a
time (an advisory lock; a prune that finds it taken leaves the indexes to the next). A rebuild
that fails leaves an invalid `<index>_ccnew` index, dropped at once or, where the prune was
killed, by the next prune.
"""

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as db
from sqlalchemy.engine import Connection

logger = logging.getLogger(__name__)

# The tables retention deletes from.
PRUNED_TABLES = ("event_logs", "asset_event_tags")
# Rebuild an index at least this many times the size its entries need ...
BLOAT_RATIO = 1.3
# ... and wasting at least this much (a small table's indexes are a few pages either way).
MIN_WASTE_BYTES = 512 * 1024
# Leaf pages are filled to 90% by a build; a page's header and special space take 40 bytes.
_FILL = 0.9 * (8192 - 40) / 8192
# Any fixed 64-bit number other than the writers' and the prunes' locks.
REINDEX_LOCK_KEY = 0x5C12A9F1E7E1043

# Each valid B-tree index of `:table`: its name, bytes, entries and its key columns' average
# stored width (NULLs take none).
_INDEXES = db.text(
    """
SELECT quote_ident(ic.relname), pg_relation_size(i.indexrelid), ic.reltuples,
       (SELECT coalesce(sum(coalesce(s.avg_width, 8) * (1 - coalesce(s.null_frac, 0))), 0)
          FROM unnest(i.indkey::int2[]) AS k(attnum)
          JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
          LEFT JOIN pg_stats s ON s.schemaname = tn.nspname AND s.tablename = tc.relname
                              AND s.attname = a.attname)
FROM pg_index i
JOIN pg_class ic ON ic.oid = i.indexrelid
JOIN pg_class tc ON tc.oid = i.indrelid
JOIN pg_namespace tn ON tn.oid = tc.relnamespace
WHERE i.indrelid = to_regclass(:table) AND i.indisvalid
  AND ic.relam = (SELECT oid FROM pg_am WHERE amname = 'btree')
"""
)
# Invalid indexes a concurrent rebuild left on `:table` (its temporary `_ccnew`/`_ccold`
# names, with a number when taken).
_LEFT_OVER = db.text(
    """
SELECT quote_ident(ic.relname)
FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
WHERE i.indrelid = to_regclass(:table) AND NOT i.indisvalid
  AND ic.relname ~ '_cc(new|old)[0-9]*$'
"""
)


@dataclass(frozen=True)
class IndexSize:
    """An index's size against what its entries need (`needed_bytes`, estimated)."""

    name: str  # quoted as an identifier
    bytes: int
    needed_bytes: float

    @property
    def ratio(self) -> float:
        """Its size over what its entries need."""
        return self.bytes / max(self.needed_bytes, 1.0)


def index_sizes(conn: Connection, table: str) -> list[IndexSize]:
    """The valid B-tree indexes of `table` with their sizes and estimated needs (see the
    module; the table needs a recent VACUUM and ANALYZE for the estimate)."""
    found = []
    for name, size, entries, width in conn.execute(_INDEXES, {"table": table}):
        # Tuple header (8) and key aligned to 8 bytes, plus the page's line pointer (4).
        entry = 8 + 8 * -(-float(width) // 8) + 4
        found.append(IndexSize(str(name), int(size), max(float(entries), 0.0) * entry / _FILL))
    return found


def bloated(
    sizes: Sequence[IndexSize],
    *,
    ratio: float = BLOAT_RATIO,
    min_waste_bytes: int = MIN_WASTE_BYTES,
) -> list[IndexSize]:
    """The indexes among `sizes` worth rebuilding (see the module)."""
    return [
        size
        for size in sizes
        if size.ratio >= ratio and size.bytes - size.needed_bytes >= min_waste_bytes
    ]


def reindex_bloated(
    conn: Connection,
    tables: Sequence[str] = PRUNED_TABLES,
    *,
    ratio: float = BLOAT_RATIO,
    min_waste_bytes: int = MIN_WASTE_BYTES,
    max_rebuilds: int | None = None,
) -> list[str]:
    """Rebuild the bloated indexes of `tables` concurrently, at most `max_rebuilds` of them
    (None: all; a sensor tick rebuilds one, the next tick the next); the names rebuilt.
    `conn` is in AUTOCOMMIT (REINDEX CONCURRENTLY refuses a transaction), after VACUUM and
    ANALYZE.

    Never fails a prune: a rebuild or a drop that fails is logged (a failed rebuild's
    leftover dropped) and the others go on. Nothing is done while another prune rebuilds."""
    locked = conn.execute(db.text("SELECT pg_try_advisory_lock(:key)"), {"key": REINDEX_LOCK_KEY})
    if not locked.scalar():
        return []
    rebuilt: list[str] = []
    try:
        for table in tables:
            _drop_left_over(conn, table)
            sizes = index_sizes(conn, table)
            # The most wasteful first, so that a limited call does the most good.
            found = bloated(sizes, ratio=ratio, min_waste_bytes=min_waste_bytes)
            for index in sorted(found, key=lambda size: size.needed_bytes - size.bytes):
                if max_rebuilds is not None and len(rebuilt) >= max_rebuilds:
                    return rebuilt
                if _quietly(conn, f"REINDEX INDEX CONCURRENTLY {index.name}"):
                    rebuilt.append(index.name)
                else:
                    _drop_left_over(conn, table)
    finally:
        conn.execute(db.text("SELECT pg_advisory_unlock(:key)"), {"key": REINDEX_LOCK_KEY})
    return rebuilt


def _drop_left_over(conn: Connection, table: str) -> None:
    for (name,) in conn.execute(_LEFT_OVER, {"table": table}).fetchall():
        _quietly(conn, f"DROP INDEX CONCURRENTLY IF EXISTS {name}")


def _quietly(conn: Connection, statement: str) -> bool:
    """Run `statement`; False (logged) when the database refuses it."""
    try:
        conn.execute(db.text(statement))
    except db.exc.DBAPIError as exc:
        logger.warning("%s failed (%s): left as it was", statement, exc)
        return False
    return True
