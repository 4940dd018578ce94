"""`BatchedPostgresEventLogStorage` in this process, on a real Postgres: the same rows as stock
dagster-postgres fed the same events, reads that see the buffer, pooled connections, and batch
ids that commit after those of a writer holding the event log's lock."""

import re
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import closing
from typing import Any

import dagster as dg
import psycopg2
import pytest
import sqlalchemy as db
from dagster_postgres.event_log.event_log import PostgresEventLogStorage

from scrapeflow_dagster.storage.dagster_internals import version_guard
from scrapeflow_dagster.storage.postgres.event_log import BatchedPostgresEventLogStorage
from scrapeflow_dagster.storage.postgres.write import EVENT_LOG_LOCK_KEY
from scrapeflow_dagster_tests.storage.events import (
    ODD_KEYS,
    RUN,
    STOCK_ROWS,
    log_line,
    materialized,
    observed,
    planned,
    store_planned_both_ways,
    two_runs,
    wiped,
)
from scrapeflow_dagster_tests.support.postgres import PostgresServer

LOCK_WAIT_TIMEOUT_SECONDS = 60.0


def connect(url: str):  # type: ignore[no-untyped-def]
    """A plain psycopg2 connection to the database of `url` (no storage, no flush)."""
    return psycopg2.connect(url.replace("postgresql+psycopg2://", "postgresql://", 1))


def table_dump(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the tables events touch; asset_keys in creation order, without its id and
    creation time: each stock upsert draws a number from the id sequence even when it updates,
    so stock ids leave gaps that one upsert per batch does not (Dagster only passes the id on
    as an opaque `storage_id`)."""
    with closing(connect(url)) as conn, conn.cursor() as cursor:
        dump = {}
        for name, query in {
            "event_logs": "SELECT * FROM event_logs ORDER BY id",
            "asset_event_tags": "SELECT * FROM asset_event_tags ORDER BY id",
            "asset_keys": "SELECT asset_key, last_materialization, last_run_id,"
            " asset_details, wipe_timestamp, last_materialization_timestamp, tags,"
            " cached_status_data FROM asset_keys ORDER BY id",
        }.items():
            cursor.execute(query)
            dump[name] = cursor.fetchall()
    return dump


@pytest.fixture
def storage(postgres: PostgresServer, request: pytest.FixtureRequest) -> Iterator[Any]:
    url = postgres.database(request.node.name.lower()[:30])
    batched = BatchedPostgresEventLogStorage(url, max_buffered_events=4, lean_writes=STOCK_ROWS)
    yield batched, url
    batched.dispose()


def test_the_same_events_give_the_same_rows_as_stock_dagster_postgres(
    postgres: PostgresServer,
) -> None:
    stock_url, batched_url = postgres.database("rows_stock"), postgres.database("rows_batched")
    stock = PostgresEventLogStorage(stock_url)
    batched = BatchedPostgresEventLogStorage(
        batched_url, max_buffered_events=3, lean_writes=STOCK_ROWS
    )
    events = two_runs()
    for event in events:
        stock.store_event(event)
    for event in events[:8]:
        batched.store_event(event)
    batched.store_event_batch(events[8:])
    batched.dispose()
    stock.dispose()
    found, expected = table_dump(batched_url), table_dump(stock_url)
    assert len(expected["event_logs"]) == len(events)
    # A data version tag per materialisation and observation, but two untagged materialisations.
    assert len(expected["asset_event_tags"]) == 9
    assert found == expected


def test_a_wipe_is_stored_as_stock_dagster_postgres_stores_it(postgres: PostgresServer) -> None:
    # An ASSET_WIPED names its asset but is no asset event: no `asset_keys` row, no tags; a
    # materialisation after it is one as usual.
    stock_url, batched_url = postgres.database("wipe_stock"), postgres.database("wipe_batched")
    stock = PostgresEventLogStorage(stock_url)
    batched = BatchedPostgresEventLogStorage(
        batched_url, max_buffered_events=3, lean_writes=STOCK_ROWS
    )
    events = [wiped("never_materialised"), materialized(RUN, "a", "p0"), wiped("a")]
    for storage in (stock, batched):
        for event in events:
            storage.store_event(event)
        storage.dispose()
    found, expected = table_dump(batched_url), table_dump(stock_url)
    assert [row[0] for row in expected["asset_keys"]] == ['["a"]']
    assert found == expected


def test_a_runs_planned_partitions_come_as_one_event_and_are_stored_as_stock_stores_each(
    postgres: PostgresServer,
) -> None:
    stock_url, batched_url = postgres.database("subset_stock"), postgres.database("subset_batched")
    stock = PostgresEventLogStorage(stock_url)
    batched = BatchedPostgresEventLogStorage(
        batched_url, max_buffered_events=3, lean_writes=STOCK_ROWS
    )
    keys = [f"k{i}" for i in range(50)] + ODD_KEYS
    store_planned_both_ways(stock, batched, keys)
    found, expected = table_dump(batched_url), table_dump(stock_url)
    assert len(expected["event_logs"]) == len(keys) + 2
    assert found == expected


def test_asset_events_wait_and_reads_see_them(storage: Any) -> None:
    batched, url = storage
    for i in range(3):
        batched.store_event(materialized(RUN, "a", f"p{i}"))
    assert batched.buffered_event_count == 3
    assert table_dump(url)["event_logs"] == []

    found = batched.fetch_materializations(dg.AssetKey("a"), limit=10).records

    assert [record.partition_key for record in found] == ["p2", "p1", "p0"]
    assert batched.buffered_event_count == 0


def test_another_event_writes_the_buffer_first_in_order(storage: Any) -> None:
    batched, url = storage
    batched.store_event(planned(RUN, "a", "p0"))
    batched.store_event(materialized(RUN, "a", "p0"))
    batched.store_event(log_line(RUN))
    rows = [(row[3], row[7]) for row in table_dump(url)["event_logs"]]
    assert rows == [
        ("ASSET_MATERIALIZATION_PLANNED", "p0"),
        ("ASSET_MATERIALIZATION", "p0"),
        (None, None),
    ]


def _backends(url: str) -> int:
    database = url.rsplit("/", 1)[1]
    with closing(psycopg2.connect(host="127.0.0.1", user="postgres", dbname="postgres")) as conn:
        with conn.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (database,))
            return int(cursor.fetchone()[0])


def test_connections_are_pooled(storage: Any) -> None:
    batched, url = storage
    for i in range(5):
        batched.store_event(log_line(RUN, f"line {i}"))
        batched.get_logs_for_run(RUN)
    # Stock dagster-postgres (NullPool) closes each connection after use: none would be left.
    assert _backends(url) == 1


def test_a_batch_waits_for_the_writer_holding_the_lock_and_gets_later_ids(storage: Any) -> None:
    batched, url = storage
    for i in range(3):
        batched.store_event(materialized(RUN, "a", f"p{i}"))
    holder = db.create_engine(url)
    with holder.connect() as conn:
        conn.execute(db.select(db.func.pg_advisory_xact_lock(EVENT_LOG_LOCK_KEY)))
        flusher = threading.Thread(target=batched.flush)
        flusher.start()
        _wait_for_a_waiting_advisory_lock(url)
        # Another writer's event, inserted while the batch waits: it must commit first.
        conn.execute(
            db.text(
                "INSERT INTO event_logs (run_id, event, dagster_event_type, timestamp)"
                " VALUES (:run, 'x', 'OTHER', now())"
            ),
            {"run": RUN},
        )
        conn.commit()
    flusher.join(timeout=LOCK_WAIT_TIMEOUT_SECONDS)
    holder.dispose()
    rows = [(row[0], row[3]) for row in table_dump(url)["event_logs"]]
    assert [event_type for _, event_type in rows] == ["OTHER"] + ["ASSET_MATERIALIZATION"] * 3
    assert [event_id for event_id, _ in rows] == sorted(event_id for event_id, _ in rows)


def _wait_for_a_waiting_advisory_lock(url: str) -> None:
    deadline = time.monotonic() + LOCK_WAIT_TIMEOUT_SECONDS
    with closing(connect(url)) as conn, conn.cursor() as cursor:
        conn.autocommit = True
        while True:
            cursor.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            )
            if cursor.fetchone()[0]:
                return
            assert time.monotonic() < deadline, "the batch never waited for the lock"
            time.sleep(0.01)


@pytest.mark.parametrize(
    "package,version",
    [("dagster-postgres", "0.29.28"), ("dagster-webserver", "1.14.0"), ("dagster-postgres", None)],
)
def test_another_package_version_is_refused_with_one_warning(
    package: str, version: str | None
) -> None:
    verified = {name: versions[0] for name, versions in version_guard.VERIFIED.items()}
    installed = {**verified, package: version}
    shown = f"{package} {version or '(not installed)'}"
    with pytest.warns(RuntimeWarning, match=re.escape(f"this is {shown}:")):
        assert not version_guard.supports_installed_versions(
            version_guard.POSTGRES_PACKAGES, installed=installed
        )
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        assert not version_guard.supports_installed_versions(
            version_guard.POSTGRES_PACKAGES, installed=installed
        )
    assert again == []
    # The SQLite storage does not lean on dagster-postgres.
    if package == "dagster-postgres":
        assert version_guard.supports_installed_versions(
            version_guard.SQLITE_PACKAGES, installed=installed
        )


def test_the_installed_versions_are_accepted() -> None:
    assert version_guard.supports_installed_versions(version_guard.POSTGRES_PACKAGES)


def test_retention_at_write_deletes_older_rows_never_the_batch_s_own_nor_leaves_their_tags(
    postgres: PostgresServer,
) -> None:
    url = postgres.database("at_write_batch")
    batched = BatchedPostgresEventLogStorage(
        url, max_buffered_events=10, retention={"superseded_grace_seconds": 0}
    )
    batched.store_event_batch([materialized(RUN, "a", "p1", "v1"), observed(RUN, "a", "p1")])
    # Two materialisations of one partition in one batch (a buffer holds many): the older of
    # the two stays for a prune, whose tags are written after the delete runs.
    batched.store_event_batch(
        [
            materialized(RUN, "a", "p1", "v2"),
            materialized(RUN, "a", "p1", "v3"),
            observed(RUN, "a", "p1"),
            materialized(RUN, "a", "p2", "v1"),
        ]
    )
    batched.dispose()
    with closing(psycopg2.connect(url.replace("postgresql+psycopg2://", "postgresql://"))) as conn:
        cursor = conn.cursor()
        cursor.execute(
            "SELECT e.partition, e.dagster_event_type, t.value FROM event_logs e"
            " JOIN asset_event_tags t ON t.event_id = e.id ORDER BY e.id"
        )
        kept = cursor.fetchall()
        cursor.execute(
            "SELECT count(*) FROM asset_event_tags t"
            " WHERE NOT EXISTS (SELECT 1 FROM event_logs e WHERE e.id = t.event_id)"
        )
        (orphans,) = cursor.fetchone()
    assert orphans == 0
    assert kept == [
        ("p1", "ASSET_MATERIALIZATION", "v2"),
        ("p1", "ASSET_MATERIALIZATION", "v3"),
        ("p1", "ASSET_OBSERVATION", "observed"),
        ("p2", "ASSET_MATERIALIZATION", "v1"),
    ]
