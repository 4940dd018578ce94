"""Where retention's SQL (`retention_sql`) runs: the SQLite index shard and run shards, or the
Postgres event log. Each chunk is one short transaction beside running runs:

- SQLite: `BEGIN IMMEDIATE` takes the write lock before the rows are read, so the "not the
  newest" test and the delete see the same rows; writers wait through their busy timeout.
- Postgres: one DELETE with its subqueries (one snapshot), under an advisory lock that only
  prunes take (never the writers' `EVENT_LOG_LOCK_KEY`, which would stop the runs).

Writers only add rows with higher ids than a prune's horizon, so they never change its answer.
"""

import sqlite3
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import sqlalchemy as db
from dagster._core.events import ASSET_CHECK_EVENTS, EVENT_TYPE_TO_PIPELINE_RUN_STATUS
from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SQLITE_BUSY_TIMEOUT_SECONDS,
    SqliteEventLogStorage,
)

from scrapeflow_dagster.storage.retention import sql
from scrapeflow_dagster.storage.retention.postgres_reindex import PRUNED_TABLES, reindex_bloated

# Any fixed 64-bit number other than the writers' lock: prunes of one database take turns.
PRUNE_LOCK_KEY = 0x5C12A9F1E7E1042
# A pass's end VACUUMs a table that a tick's own deletes did not touch only when at least this
# share of its rows is dead (a pass's earlier ticks' deletes that autovacuum has not freed).
VACUUM_DEAD_FRACTION = 0.01
# A checkpoint after a prune must not hold up a run's writes for long; it is retried next time.
CHECKPOINT_BUSY_MILLISECONDS = 1000
# Run logs of a run keep its status events (run status sensors read them) and asset check
# events (`asset_check_executions` points at them).
# Runs whose logs one Postgres statement removes.
RUNS_PER_STATEMENT = 500
_KEPT_RUN_EVENT_TYPES = tuple(
    sorted(
        {event_type.value for event_type in EVENT_TYPE_TO_PIPELINE_RUN_STATUS}
        | {event_type.value for event_type in ASSET_CHECK_EVENTS}
        | set(sql.ASSET_KINDS)
    )
)


class Backend(Protocol):
    """The operations `retention.prune` needs from one kind of event log."""

    def fetch(self, statement: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]: ...

    def horizon_id(self, cutoff: datetime | None) -> int: ...

    def prune_chunk(
        self, clause: str, params: Mapping[str, Any], *, dry_run: bool
    ) -> Counter[str]: ...

    def remove_run_logs(self, run_ids: Sequence[str], *, dry_run: bool) -> int: ...

    def size_bytes(self) -> int: ...

    def reclaim(
        self, *, full: bool, deleted: int, pass_complete: bool, max_rebuilds: int | None = None
    ) -> list[str]:
        """Give freed space back (`full`: all of it, the home idle) after a prune that deleted
        `deleted` rows and did (`pass_complete`) or did not reach its horizon, rebuilding at
        most `max_rebuilds` indexes (None: all that need it); the indexes rebuilt."""
        ...

    def close(self) -> None: ...


def _counts(rows: Sequence[tuple[Any, ...]]) -> Counter[str]:
    return Counter(str(row[0]) for row in rows)


class SqliteBackend:
    """The index shard of a SQLite event log (asset rows) and its run shards (run logs)."""

    def __init__(self, storage: SqliteEventLogStorage) -> None:
        self._storage = storage
        with storage.index_connection():  # created (and stamped) when missing, as Dagster does
            pass
        self._index_path = Path(storage.path_for_shard(INDEX_SHARD_NAME))
        # Autocommit: every transaction below is an explicit BEGIN IMMEDIATE ... COMMIT.
        self._conn = sqlite3.connect(
            self._index_path, isolation_level=None, timeout=SQLITE_BUSY_TIMEOUT_SECONDS
        )

    def fetch(self, statement: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        return self._conn.execute(statement, dict(params)).fetchall()

    def horizon_id(self, cutoff: datetime | None) -> int:
        if cutoff is None:
            row = self._conn.execute("SELECT max(id) FROM event_logs").fetchone()
        else:
            # Stored as SQLAlchemy writes a naive UTC datetime; newest first, so few rows read.
            row = self._conn.execute(
                "SELECT id FROM event_logs WHERE timestamp <= ? ORDER BY id DESC LIMIT 1",
                (cutoff.strftime("%Y-%m-%d %H:%M:%S.%f"),),
            ).fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def prune_chunk(self, clause: str, params: Mapping[str, Any], *, dry_run: bool) -> Counter[str]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            if dry_run:
                counts = Counter(dict(self.fetch_counts(clause, params)))
            else:
                self._conn.execute(sql.with_partitions(sql.SQLITE_DELETE_TAGS, clause), params)
                counts = _counts(
                    self.fetch(sql.with_partitions(sql.SQLITE_DELETE_EVENTS, clause), params)
                )
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        return counts

    def fetch_counts(self, clause: str, params: Mapping[str, Any]) -> list[tuple[str, int]]:
        """What `prune_chunk` would delete in the chunk, by kind."""
        rows = self.fetch(sql.with_partitions(sql.COUNT_DOOMED, clause), params)
        return [(str(kind), int(n)) for kind, n in rows]

    def remove_run_logs(self, run_ids: Sequence[str], *, dry_run: bool) -> int:
        removed = 0
        for run_id in run_ids:  # a run whose shard is gone costs a `stat`
            shard = Path(self._storage.path_for_shard(run_id))
            if not shard.exists() or self.fetch(sql.RUN_REFERENCED, {"run_id": run_id}):
                continue
            if not dry_run:
                # The run's status events stay in the index shard; a later read of its logs
                # finds an empty shard, made again by Dagster.
                for path in (shard, Path(f"{shard}-wal"), Path(f"{shard}-shm")):
                    path.unlink(missing_ok=True)
                self._storage._initialized_dbs.discard(run_id)
            removed += 1
        return removed

    def size_bytes(self) -> int:
        folder = self._index_path.parent
        total = 0
        for entry in folder.iterdir():
            try:
                total += entry.stat().st_size if entry.is_file() else 0
            except FileNotFoundError:
                # A journal SQLite removed between the listing and the stat (runs write beside
                # a prune): it holds nothing the size is for.
                continue
        return total

    def reclaim(
        self, *, full: bool, deleted: int, pass_complete: bool, max_rebuilds: int | None = None
    ) -> list[str]:
        if not (full or deleted or pass_complete):
            return []  # mid-pass and nothing freed: the pages go back when something is
        if full:
            # `auto_vacuum` changes only with a VACUUM on a database that has tables: once, for
            # homes made before it was set (an exclusive lock: no runs meanwhile).
            self._conn.executescript("PRAGMA auto_vacuum = INCREMENTAL; VACUUM;")
        else:
            # `executescript`: `execute` steps the pragma once, which frees a single page.
            self._conn.executescript("PRAGMA incremental_vacuum;")
        self._conn.execute(f"PRAGMA busy_timeout = {CHECKPOINT_BUSY_MILLISECONDS}")
        try:
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except sqlite3.OperationalError:
            pass  # busy: the WAL shrinks at a later checkpoint
        finally:
            self._conn.execute(f"PRAGMA busy_timeout = {int(SQLITE_BUSY_TIMEOUT_SECONDS * 1000)}")
        return []  # SQLite frees an index's emptied pages itself (`incremental_vacuum`)

    def close(self) -> None:
        self._conn.close()


class PostgresBackend:
    """The one `event_logs` table of a Postgres event log."""

    def __init__(self, storage: SqlEventLogStorage, engine: db.engine.Engine) -> None:
        self._storage = storage
        self._engine = engine

    def fetch(self, statement: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        with self._engine.connect() as conn:
            return [tuple(row) for row in conn.execute(db.text(statement), dict(params))]

    def horizon_id(self, cutoff: datetime | None) -> int:
        if cutoff is None:
            rows = self.fetch("SELECT max(id) FROM event_logs", {})
        else:
            rows = self.fetch(
                "SELECT id FROM event_logs WHERE timestamp <= :cutoff ORDER BY id DESC LIMIT 1",
                {"cutoff": cutoff},
            )
        return int(rows[0][0]) if rows and rows[0][0] is not None else 0

    def _transaction(self, statement: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        with self._engine.connect() as plain:
            conn = plain.execution_options(isolation_level="READ COMMITTED")
            with conn.begin():
                conn.execute(db.text("SELECT pg_advisory_xact_lock(:key)"), {"key": PRUNE_LOCK_KEY})
                return [tuple(row) for row in conn.execute(db.text(statement), dict(params))]

    def prune_chunk(self, clause: str, params: Mapping[str, Any], *, dry_run: bool) -> Counter[str]:
        if dry_run:
            rows = self.fetch(sql.with_partitions(sql.COUNT_DOOMED, clause), params)
            return Counter({str(kind): int(n) for kind, n in rows})
        return _counts(self._transaction(sql.with_partitions(sql.POSTGRES_DELETE, clause), params))

    def remove_run_logs(self, run_ids: Sequence[str], *, dry_run: bool) -> int:
        # A statement per `RUNS_PER_STATEMENT` runs: one per run took ~1-3 ms each, every pass
        # end, for every finished run the home ever had (runs whose logs are gone included).
        kept = ", ".join(f"'{event_type}'" for event_type in _KEPT_RUN_EVENT_TYPES)
        condition = (
            "e.run_id = ANY(CAST(:run_ids AS text[])) AND (e.dagster_event_type IS NULL"
            f" OR e.dagster_event_type NOT IN ({kept})) AND NOT EXISTS ("
            "SELECT 1 FROM event_logs AS k WHERE k.run_id = e.run_id"
            f" AND k.dagster_event_type IN ({sql.KINDS_SQL}))"
        )
        removed = 0
        for start in range(0, len(run_ids), RUNS_PER_STATEMENT):
            params = {"run_ids": list(run_ids[start : start + RUNS_PER_STATEMENT])}
            if dry_run:
                rows = self.fetch(
                    f"SELECT count(DISTINCT e.run_id) FROM event_logs AS e WHERE {condition}",
                    params,
                )
                removed += int(rows[0][0])
            else:
                deleted = self._transaction(
                    f"DELETE FROM event_logs AS e WHERE {condition} RETURNING e.run_id", params
                )
                removed += len({row[0] for row in deleted})
        return removed

    def size_bytes(self) -> int:
        # The tables retention deletes from, with their indexes and TOAST: the rest of the
        # database (runs, schedules, an empty database's catalog) would blur the ratios.
        rows = self.fetch(
            "SELECT pg_total_relation_size('event_logs')"
            " + pg_total_relation_size('asset_event_tags')",
            {},
        )
        return int(rows[0][0])

    def reclaim(
        self, *, full: bool, deleted: int, pass_complete: bool, max_rebuilds: int | None = None
    ) -> list[str]:
        # VACUUM refuses to run in a transaction. FULL returns the space to the system and
        # rebuilds the indexes but locks the tables (writers wait): on request only. Else, once
        # a pass is through, the tables with dead rows are vacuumed and the bloated indexes
        # rebuilt beside the runs (`postgres_reindex`, which needs the statistics ANALYZE
        # gathers). Mid-pass nothing is done: a VACUUM of a large event log takes longer than a
        # sensor tick may, and Postgres's autovacuum frees the rows of a long pass meanwhile.
        if not (full or pass_complete):
            return []
        with self._engine.connect() as plain:
            conn = plain.execution_options(isolation_level="AUTOCOMMIT")
            if full:
                conn.execute(db.text(f"VACUUM FULL {', '.join(PRUNED_TABLES)}"))
                return []
            tables = [table for table in PRUNED_TABLES if deleted or _worth_vacuuming(conn, table)]
            if tables:
                conn.execute(db.text(f"VACUUM (ANALYZE) {', '.join(tables)}"))
            # Checked after every pass, vacuumed or not: a run's own VACUUM of the planned rows
            # it deleted leaves their index pages (`postgres_reindex`).
            return reindex_bloated(conn, max_rebuilds=max_rebuilds)

    def close(self) -> None:
        pass


def _worth_vacuuming(conn: db.engine.Connection, table: str) -> bool:
    """Whether `table` holds at least `VACUUM_DEAD_FRACTION` of its rows dead, as Postgres's
    statistics count them (they lag the deletes by a second or so: the caller adds its own).
    Runs delete planned rows all the time, so a busy table always has a few: those are left to
    the runs' own VACUUM (`postgres_vacuum`) and to autovacuum."""
    row = conn.execute(
        db.text(
            "SELECT n_dead_tup, n_live_tup FROM pg_stat_user_tables"
            " WHERE relid = to_regclass(:table)"
        ),
        {"table": table},
    ).fetchone()
    if row is None or row[0] is None:
        return False
    return int(row[0]) > 0 and int(row[0]) >= VACUUM_DEAD_FRACTION * int(row[1] or 0)


def backend_for(storage: Any) -> tuple[Backend, str]:
    """The backend of the event log `storage` and its kind (`sqlite` or `postgres`).

    Raises:
        TypeError: for an event log retention does not know.
    """
    if isinstance(storage, SqliteEventLogStorage):
        return SqliteBackend(storage), "sqlite"
    try:
        from dagster_postgres.event_log.event_log import PostgresEventLogStorage
    except ImportError:  # the embedded default installs no Postgres backend
        PostgresEventLogStorage = None  # type: ignore[assignment,misc]
    if PostgresEventLogStorage is not None and isinstance(storage, PostgresEventLogStorage):
        return PostgresBackend(storage, storage._engine), "postgres"
    raise TypeError(
        f"retention prunes SQLite and Postgres event logs, not {type(storage).__name__}"
    )
