"""VACUUM while writing (`storage/postgres/vacuum.py`): a Postgres home's run deletes its planned
rows as their partitions are materialised, and the process vacuums the event log as they add up,
so the run's later rows reuse their space.

Two homes on real Postgres databases given the same chain run through the real `dagster asset
materialize` (one task at a time, one in 30 a 404): the one vacuuming while it writes ends with
a smaller event log and reads the same. (That every read stays as on a stock home with VACUUMs
between a run's writes: `test_lean_writes`, whose Postgres lean home vacuums every 5 deletes.)
"""

import dataclasses
from contextlib import closing
from pathlib import Path

import dagster as dg
import pytest

from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster.storage.batches.lean_writes import (
    POSTGRES_LEAN_WRITES,
    LeanWrites,
    lean_writes_from_config,
)
from scrapeflow_dagster_tests.storage.homes import instance_of, require_postgres_extra
from scrapeflow_dagster_tests.storage.retention_homes import (
    ChainHome,
    reads,
    runs_named,
    task_rows,
    write_chain_home,
)
from scrapeflow_dagster_tests.support.postgres import PostgresServer

TASKS = 400
# Events per batch: a run of 400 tasks in batches of 1,000 (the default) writes three, one
# per asset, where a large run writes hundreds.
BATCH = 40


def _batches_of(home: Path, events: int) -> None:
    config = home / "dagster.yaml"
    marker = "EventLogStorage\n  config:\n"
    batched = f"{marker}    max_buffered_events: {events}\n"
    config.write_text(config.read_text().replace(marker, batched, 1))


def _heap_bytes(url: str) -> int:
    import psycopg2

    dsn = url.replace("postgresql+psycopg2://", "postgresql://", 1)
    with closing(psycopg2.connect(dsn)) as conn, conn.cursor() as cursor:
        cursor.execute("SELECT pg_relation_size('event_logs')")
        return int(cursor.fetchone()[0])


def test_vacuum_while_writing_lets_a_run_reuse_its_deleted_planned_rows(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    require_postgres_extra()
    with SiteThread(pages=TASKS, page_bytes=500) as site:
        rows = task_rows(site, TASKS, tag="vacuum-")
        homes: dict[str, tuple[ChainHome, str]] = {}
        for name, vacuum_after in (("vacuumed", 100), ("not", None)):
            url = postgres.database(f"vacuum_{name}")
            lean = dataclasses.replace(POSTGRES_LEAN_WRITES, vacuum_after_deleted=vacuum_after)
            home = write_chain_home(tmp_path / name, postgres_url=url, lean=lean)
            _batches_of(home, BATCH)
            chain = ChainHome(home, tmp_path / f"{name}-data", rows)
            chain.run(forced=False, cwd=tmp_path, one_at_a_time=True)
            homes[name] = (chain, url)

    (vacuumed, vacuumed_url), (not_vacuumed, not_url) = homes["vacuumed"], homes["not"]
    # Measured at 400 tasks: ~0.6x (the materialisations in the planned rows' space); without
    # a VACUUM during the run the two are the same size to the page.
    assert _heap_bytes(vacuumed_url) < 0.8 * _heap_bytes(not_url), (
        _heap_bytes(vacuumed_url),
        _heap_bytes(not_url),
    )
    # The same states, failures (one in 30) and UI answers.
    vacuumed_reads = runs_named(vacuumed.home, reads(vacuumed.home, vacuumed.keys))
    assert "FAILED" in vacuumed_reads
    assert vacuumed_reads == runs_named(
        not_vacuumed.home, reads(not_vacuumed.home, not_vacuumed.keys)
    )


def test_vacuum_after_deleted_is_refused_where_it_cannot_apply(tmp_path: Path) -> None:
    with pytest.raises(dg.DagsterInvalidConfigError, match="vacuum_after_deleted must be 1"):
        lean_writes_from_config({"vacuum_after_deleted": 0}, POSTGRES_LEAN_WRITES)
    home = write_chain_home(tmp_path / "sqlite", lean=LeanWrites(vacuum_after_deleted=100))
    with pytest.raises(dg.DagsterInvalidConfigError, match="is for the Postgres storage"):
        with instance_of(home) as instance:
            instance.event_log_storage  # noqa: B018 (the storage is built on first use)
