"""Retention's rebuild of the Postgres event log's bloated indexes (`storage/postgres_reindex`).

A real Postgres home after a real chain run (`dagster asset materialize`), its indexes bloated
as a large run's deleted planned rows leave them (rows inserted and deleted in bulk), and a
leftover of a killed concurrent rebuild: `scrapeflow home prune` (the real CLI) rebuilds
exactly the bloated indexes and says which, drops the leftover, and changes no read; a second
prune rebuilds nothing.
"""

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as db

from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster.storage.retention.postgres_reindex import (
    PRUNED_TABLES,
    bloated,
    index_sizes,
)
from scrapeflow_dagster.storage.retention.prune import RetentionPolicy
from scrapeflow_dagster_tests.storage.homes import require_postgres_extra
from scrapeflow_dagster_tests.storage.retention_homes import (
    ChainHome,
    leave_deleted_planned_rows,
    reads,
    task_rows,
    write_chain_home,
)
from scrapeflow_dagster_tests.support.postgres import PostgresServer
from scrapeflow_dagster_tests.support.processes import process_env

TASKS = 30
COPIES = 1500  # copies of each planned row left by the run: ~10,000 rows inserted, deleted
POLICY = RetentionPolicy(superseded_grace_seconds=0, run_logs_keep_days=None)
LEFTOVER = "idx_events_by_run_id_ccnew"  # the name a killed REINDEX CONCURRENTLY leaves


@pytest.fixture(scope="module")
def site() -> Iterator[SiteThread]:
    with SiteThread(pages=100, page_bytes=2000) as served:
        yield served


def _home_prune(home: Path, data: Path) -> tuple[list[str], int, int]:
    """`scrapeflow home prune` on `home`: the indexes it says it rebuilt, and the event log's
    bytes before and after."""
    done = subprocess.run(
        [sys.executable, "-m", "scrapeflow_dagster.cli", "home", "prune"],
        env=process_env(home, data),
        cwd=home.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    sizes = re.search(r"event log: ([\d,]+) bytes before, ([\d,]+) after", done.stdout)
    assert sizes, done.stdout
    rebuilt = re.search(r"^indexes rebuilt: (.+)$", done.stdout, re.MULTILINE)
    before, after = (int(size.replace(",", "")) for size in sizes.groups())
    return (rebuilt.group(1).split(", ") if rebuilt else []), before, after


def _invalid_indexes(conn: db.Connection) -> list[str]:
    rows = conn.execute(
        db.text(
            "SELECT ic.relname FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid"
            " WHERE i.indrelid = 'event_logs'::regclass AND NOT i.indisvalid"
        )
    )
    return [str(name) for (name,) in rows]


def test_a_prune_rebuilds_the_bloated_indexes_and_changes_no_read(
    site: SiteThread, tmp_path: Path, postgres: PostgresServer
) -> None:
    require_postgres_extra()
    url = postgres.database("reindex")
    home = write_chain_home(tmp_path / "home", policy=POLICY, postgres_url=url)
    chain = ChainHome(home, tmp_path / "data", task_rows(site, TASKS, tag="reindex-"))
    chain.run(forced=False, cwd=tmp_path)

    engine = db.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            leave_deleted_planned_rows(conn, COPIES)
            # A rebuild killed half-way leaves an invalid index beside the one it rebuilt.
            with pytest.raises(db.exc.IntegrityError):
                conn.execute(
                    db.text(
                        f"CREATE UNIQUE INDEX CONCURRENTLY {LEFTOVER}"
                        " ON event_logs (dagster_event_type)"
                    )
                )
            assert _invalid_indexes(conn) == [LEFTOVER]
            conn.execute(db.text("VACUUM (ANALYZE) event_logs"))
            bloated_before = {
                size.name: size.bytes for size in bloated(index_sizes(conn, "event_logs"))
            }
        reads(home, chain.keys)  # the status cache stored, as after any UI visit
        before = reads(home, chain.keys)
        # The planned rows' indexes: by asset and partition, by asset, by type.
        planned = {"idx_events_by_asset_partition", "idx_events_by_asset", "idx_event_type"}
        assert planned <= set(bloated_before)

        reindexed, bytes_before, bytes_after = _home_prune(home, tmp_path / "data")
        again, _, _ = _home_prune(home, tmp_path / "data")

        assert set(reindexed) == set(bloated_before)
        assert bytes_after < bytes_before
        assert again == []
        assert reads(home, chain.keys) == before
        with engine.connect() as conn:
            assert _invalid_indexes(conn) == []
            for table in PRUNED_TABLES:
                assert bloated(index_sizes(conn, table)) == [], table
            # Each rebuilt to the few pages its entries need (the inserted rows took hundreds).
            now = {size.name: size.bytes for size in index_sizes(conn, "event_logs")}
            for name, size in bloated_before.items():
                assert now[name] * 8 < size, (name, now[name], size)
    finally:
        engine.dispose()
