"""A run's planned rows written ahead of its progress on Postgres (`storage/planned/paced.py`).

- `Frontier`: where the run is at work comes from what it did (one region per shard's slice),
  each region's head `lead` past its furthest done key, done keys skipped, regions merged.
- On a real Postgres home, a real storage's thread: before the run does anything only the
  first `lead` rows per asset are there; as materialisations come (from the slices of two
  shards) the planned rows follow them `lead` ahead and no further; the run's end writes every
  row left, so each partition not materialised says the run planned it (FAILED once it
  failed), and no materialised partition keeps this run's planned row. A run whose events
  are deleted meanwhile gets no more planned rows, not even when the storage is disposed of.
"""

import dataclasses
import threading
import time
from pathlib import Path

import dagster as dg
import pytest
import sqlalchemy as db
from dagster._core.events import (
    DagsterEventType,
)

from scrapeflow_dagster.scaleout.shards import split_keys
from scrapeflow_dagster.storage.batches.lean_writes import POSTGRES_LEAN_WRITES
from scrapeflow_dagster.storage.planned.paced import Frontier
from scrapeflow_dagster.storage.retention.prune import RetentionPolicy
from scrapeflow_dagster_tests.storage.events import (
    RUN,
    materialized,
    observed,
    planned_subset,
    run_failed,
)
from scrapeflow_dagster_tests.storage.homes import instance_of, require_postgres_extra
from scrapeflow_dagster_tests.storage.retention_homes import write_chain_home
from scrapeflow_dagster_tests.support.postgres import PostgresServer

PLANNED = DagsterEventType.ASSET_MATERIALIZATION_PLANNED.value
LEAD = 5
KEYS = [f"host-page-{n:03d}" for n in range(60)]
# The thread reads the run's progress every 0.5 s: what it writes shows up well within this.
SETTLE_SECONDS = 15.0


def test_the_frontier_follows_each_region_lead_ahead_and_skips_done_keys() -> None:
    frontier = Frontier(total=40, lead=3, written=3)  # positions 0-2 before the run
    assert frontier.ahead(100) == []  # nothing done: no further than the first rows
    frontier.done([0, 1])
    assert frontier.ahead(100) == [3, 4]  # 1 + 3
    frontier.done([20, 21, 22])  # a second shard's slice starts at 20
    assert frontier.ahead(100) == [23, 24, 25]
    frontier.done([4, 5, 6])  # 5 and 6 were done before their row was written
    assert frontier.ahead(2) == [7, 8]  # at most `most` at a time
    assert frontier.ahead(100) == [9]
    frontier.done(range(7, 19))
    # The first region's head runs into the second, already `lead` ahead: merged, no
    # position written twice.
    assert frontier.ahead(100) == [19]
    frontier.done(range(23, 28))
    frontier.done([28], materialised=False)  # failed: the run got there, its row is written
    assert frontier.ahead(100) == [28, 29, 30, 31]
    frontier.done([29, 30], materialised=False)
    assert frontier.ahead(100) == [32, 33]
    assert not frontier.complete
    assert frontier.rest() == list(range(34, 40))
    assert frontier.complete and frontier.ahead(100) == [] and frontier.rest() == []


def test_a_region_opened_by_a_failure_writes_its_row() -> None:
    frontier = Frontier(total=20, lead=2, written=2)
    frontier.done([10], materialised=False)  # a shard's first key failed
    assert frontier.ahead(100) == [10, 11, 12]
    frontier.done([15])  # another shard's first key materialised: no row for it
    assert frontier.ahead(100) == [16, 17]


def _planned_keys(conn: db.Connection, run_id: str) -> set[str]:
    found = conn.execute(
        db.text(
            "SELECT partition FROM event_logs WHERE run_id = :run AND dagster_event_type = :kind"
        ),
        {"run": run_id, "kind": PLANNED},
    )
    return {partition for (partition,) in found}


def _last_analyze(conn: db.Connection) -> str | None:
    found = conn.execute(
        db.text("SELECT last_analyze FROM pg_stat_user_tables WHERE relname = 'event_logs'")
    ).scalar()
    return None if found is None else "set"


def _paced_home(
    tmp_path: Path, request: pytest.FixtureRequest, name: str
) -> tuple[Path, db.Engine]:
    """A Postgres home writing LEAD planned rows per asset ahead of a run, and an engine on
    its database (dispose of it)."""
    require_postgres_extra()
    server: PostgresServer = request.getfixturevalue("postgres")
    url = server.database(f"planned_paced_{name}")
    lean = dataclasses.replace(POSTGRES_LEAN_WRITES, planned_rows_before_run=LEAD)
    home = write_chain_home(
        tmp_path / "home",
        policy=RetentionPolicy(superseded_grace_seconds=0, run_logs_keep_days=None),
        postgres_url=url,
        lean=lean,
    )
    return home, db.create_engine(url)


def _settles(read, expected: set[str]) -> set[str]:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + SETTLE_SECONDS
    while (found := read()) != expected and time.monotonic() < deadline:
        time.sleep(0.1)
    return found  # type: ignore[no-any-return]


@pytest.mark.parametrize("run_in", ["the creating process", "another process"])
def test_planned_rows_follow_the_run_on_postgres(
    run_in: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # "another process": the run's events come through a storage of their own (a run the
    # daemon launched), so its end is seen in the event log, not waited for.
    home, engine = _paced_home(tmp_path, request, f"follow_{run_in.split()[0]}")
    first, second = split_keys(KEYS, 2)  # two shards' slices of the sorted keys
    keys = KEYS
    with (
        instance_of(home) as instance,
        instance_of(home) as other,
        engine.connect() as conn,
    ):
        storage = instance.event_log_storage
        runs = storage if run_in == "the creating process" else other.event_log_storage

        def planned() -> set[str]:
            return _planned_keys(conn, RUN)

        def materialise(done: list[str]) -> None:
            for key in done:
                runs.store_event(materialized(RUN, "scrape", key, version=None))
            runs.flush()

        storage.store_event(planned_subset(RUN, "scrape", keys)[0])
        assert planned() == set(first[:LEAD])
        time.sleep(1.5)  # three of the thread's reads: nothing done, nothing more written
        assert planned() == set(first[:LEAD])

        materialise(first[:4])  # the first shard's first keys
        assert _settles(planned, set(first[4 : 4 + LEAD])) == set(first[4 : 4 + LEAD])
        # Its first chunk analysed the table (`GrowthAnalyze`): the chunk's check needs it.
        assert _settles(lambda: {_last_analyze(conn)} - {None}, {"set"}) == {"set"}
        # A failed partition: an observation, the run gets on, its planned row stays.
        runs.store_event(observed(RUN, "scrape", first[4]))
        runs.flush()
        assert _settles(planned, set(first[4 : 5 + LEAD])) == set(first[4 : 5 + LEAD])
        materialise(second[:2])  # the second shard's first keys: a second region
        expected = set(first[4 : 5 + LEAD]) | set(second[2 : 2 + LEAD])
        assert _settles(planned, expected) == expected

        runs.store_event(run_failed(RUN))
        done = set(first[:4]) | set(second[:2])
        if runs is storage:  # the run's end waited for every row left
            assert planned() == set(keys) - done
        else:  # seen at the thread's next read
            assert _settles(planned, set(keys) - done) == set(keys) - done
        materialised = storage.get_materialized_partitions(dg.AssetKey("scrape"))
        assert materialised == done
        attempts = (
            storage.get_latest_asset_partition_materialization_attempts_without_materializations(
                dg.AssetKey("scrape")
            )
        )
        assert set(attempts) == set(keys) - done
        assert {run_id for run_id, _ in attempts.values()} == {RUN}
    engine.dispose()


@pytest.mark.parametrize("deleted_by", ["the creating process", "another process"])
def test_a_run_deleted_while_its_rows_are_paced_gets_no_more_rows(
    deleted_by: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    home, engine = _paced_home(tmp_path, request, f"deleted_{deleted_by.split()[0]}")
    keys = KEYS

    def pacing() -> bool:
        return any(t.name.startswith("scrapeflow-planned") for t in threading.enumerate())

    with instance_of(home) as instance, instance_of(home) as other, engine.connect() as conn:
        storage = instance.event_log_storage
        storage.store_event(planned_subset(RUN, "scrape", keys)[0])
        assert _planned_keys(conn, RUN) == set(keys[:LEAD]) and pacing()
        if deleted_by == "the creating process":  # as `dagster run delete` does
            storage.delete_events(RUN)
            assert not pacing()
        else:  # seen at the thread's next read
            other.event_log_storage.delete_events(RUN)
            deadline = time.monotonic() + SETTLE_SECONDS
            while pacing() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not pacing()
        assert _planned_keys(conn, RUN) == set()
    with engine.connect() as conn:  # the instances disposed: still nothing written
        assert _planned_keys(conn, RUN) == set()
    engine.dispose()
