"""Lean writes (`storage/batches/lean_writes.py`): two homes, one with lean writes (a run's log
keeps a sample of its asset events, superseded planned rows are deleted as materialisations
land, the asset index stores bodies compact) and one writing every row as stock Dagster does,
given the same chain runs through the real `dagster asset materialize` (one task at a time, so
both store the same events in the same order), on SQLite and on Postgres.

Every read of Dagster and the UI must be the same in both (partition states, the status cache
kept and rebuilt, latest ids, attempts, the UI's partition health and detail, the assets'
event history), before and after a retention prune and after `scrapeflow home expand`; the
lean home is smaller. A Dagster
upgrade that reads the rows another way fails here (`make compat` runs this module).
"""

import dataclasses
import json
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from dagster._core.events import DagsterEventType

from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster.storage.batches.bodies import PREFIX as COMPACT_PREFIX
from scrapeflow_dagster.storage.batches.lean_writes import STOCK_WRITES, LeanWrites
from scrapeflow_dagster.storage.retention.prune import RetentionPolicy, prune
from scrapeflow_dagster_tests.storage.homes import instance_of, require_postgres_extra
from scrapeflow_dagster_tests.storage.retention_homes import (
    ChainHome,
    histories,
    home_bytes,
    reads,
    runs_named,
    task_rows,
    turn_to_failures,
    write_chain_home,
)
from scrapeflow_dagster_tests.support.postgres import PostgresServer
from scrapeflow_dagster_tests.support.processes import process_env

TASKS = 40
SAMPLE = 5  # asset events of each (asset, kind) the lean home's run logs keep
PLANNED = "ASSET_MATERIALIZATION_PLANNED"
MATERIALIZATION = DagsterEventType.ASSET_MATERIALIZATION
OBSERVATION = DagsterEventType.ASSET_OBSERVATION
PLANNED_KIND = DagsterEventType.ASSET_MATERIALIZATION_PLANNED


@pytest.fixture(scope="module")
def site() -> Iterator[SiteThread]:
    with SiteThread(pages=200, page_bytes=2000) as served:
        yield served


def _home(tmp_path: Path, name: str, lean: LeanWrites, url: str | None) -> Path:
    if url is not None:  # every planned row before the run starts on Postgres
        lean = dataclasses.replace(lean, planned_rows_before_run=None)
        if lean.delete_superseded_planned:  # and VACUUMs between the run's writes
            lean = dataclasses.replace(lean, vacuum_after_deleted=5)
    return write_chain_home(
        tmp_path / name,
        policy=RetentionPolicy(superseded_grace_seconds=0, run_logs_keep_days=None),
        postgres_url=url,
        lean=lean,
    )


def _run_log_asset_events(home: Path) -> dict[int, Counter[tuple[str, str]]]:
    """Per run (by position): its own log's asset events, counted by (asset, kind), and its
    log lines (kind "message")."""
    counted: dict[int, Counter[tuple[str, str]]] = {}
    with instance_of(home) as instance:
        for position, run in enumerate(reversed(instance.get_runs())):
            counts: Counter[tuple[str, str]] = Counter()
            for record in instance.get_records_for_run(run.run_id, limit=9_999).records:
                entry = record.event_log_entry
                event = entry.dagster_event
                if event is None:
                    if "stored with the asset" in entry.user_message:
                        counts[("note", "message")] += 1
                elif event.asset_key is not None:
                    counts[(event.asset_key.to_user_string(), event.event_type_value)] += 1
            counted[position] = counts
    return counted


def _run_asset_reads(home: Path) -> list[Any]:
    """Per run, oldest first: its materialisations and observations as `get_records_for_run`
    lists them and the partitions `get_asset_partitions_for_run` names; the asset keys of its
    events of every kind (`get_asset_keys_for_run`). A run's planned events are read by key
    only in Dagster (`CachingInstanceQueryer.get_planned_materializations_for_run`): lean
    writes keep every key's, not every partition's."""
    kinds = [MATERIALIZATION, OBSERVATION]
    found = []
    with instance_of(home) as instance:
        for run in reversed(instance.get_runs()):
            records = {
                kind.value: sorted(
                    (str(r.event_log_entry.dagster_event.asset_key), str(r.partition_key))
                    for r in instance.get_records_for_run(run.run_id, of_type=kind).records
                    if r.event_log_entry.dagster_event is not None
                )
                for kind in kinds
            }
            partitions = {
                kind.value: {
                    str(key): sorted(map(str, names))
                    for key, names in instance.get_asset_partitions_for_run(
                        run.run_id, kind
                    ).items()
                }
                for kind in kinds
            }
            keys = {
                str(kind): sorted(map(str, instance.get_asset_keys_for_run(run.run_id, kind)))
                for kind in [None, PLANNED_KIND, *kinds]
            }
            found.append((records, partitions, keys))
    return found


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_lean_writes_change_no_read_and_keep_less(
    backend: str, site: SiteThread, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    urls: list[str | None] = [None, None]
    if backend == "postgres":
        require_postgres_extra()
        server: PostgresServer = request.getfixturevalue("postgres")
        urls = [server.database("lean_writes_lean"), server.database("lean_writes_stock")]
    tag = f"lean-{backend}-"
    rows = task_rows(site, TASKS, tag=tag)
    lean_writes = LeanWrites(run_log_asset_events=SAMPLE)
    lean = ChainHome(_home(tmp_path, "lean", lean_writes, urls[0]), tmp_path / "lean-data", rows)
    stock = ChainHome(
        _home(tmp_path, "stock", STOCK_WRITES, urls[1]), tmp_path / "stock-data", rows
    )
    homes = (lean, stock)

    for forced in (False, True):
        for chain in homes:
            chain.run(forced=forced, cwd=tmp_path, one_at_a_time=True)
    turned = turn_to_failures(site, lean.keys, tag)  # materialised twice, then failing
    for chain in homes:
        chain.run(forced=True, cwd=tmp_path, one_at_a_time=True)

    def every_read(chain: ChainHome) -> tuple[str, str, str]:
        reads(chain.home, chain.keys)  # the status cache stored, as after any UI visit
        return (
            runs_named(chain.home, reads(chain.home, chain.keys)),
            runs_named(chain.home, reads(chain.home, chain.keys, rebuild=True)),
            runs_named(chain.home, histories(chain.home)),
        )

    lean_reads, stock_reads = every_read(lean), every_read(stock)
    assert turned and "FAILED" in lean_reads[0]
    assert lean_reads == stock_reads

    # Dagster's run reads of asset events (sensors, re-execution, `get_asset_keys_for_run`)
    # see every one, though the run's own shard keeps a sample.
    assert _run_asset_reads(lean.home) == _run_asset_reads(stock.home)

    if backend == "sqlite":
        # Each run's log: the first SAMPLE of each (asset, kind) and one note for each that
        # had more; the stock home's logs have every event.
        for position, counts in _run_log_asset_events(lean.home).items():
            stock_counts = _run_log_asset_events(stock.home)[position]
            over = [key for key, count in stock_counts.items() if count > SAMPLE]
            assert over, stock_counts
            assert counts[("note", "message")] == len(over), counts
            for key, count in stock_counts.items():
                assert counts[key] == min(count, SAMPLE), (position, key)
        # At 40 tasks a home is mostly fixed costs (empty shards, tables); `make bench` gives
        # the bytes per task at scale (docs/performance.md).
        assert home_bytes(lean.home) < 0.8 * home_bytes(stock.home)

    # The asset index holds every materialisation's, observation's and planned body compact,
    # the stock home none.
    assert _bodies(lean.home, urls[0]) == {"compact": _asset_rows(lean.home, urls[0]), "json": 0}
    assert _bodies(stock.home, urls[1])["compact"] == 0
    planned_bodies = _bodies(lean.home, urls[0], PLANNED_SQL)
    assert planned_bodies["json"] == 0 and planned_bodies["compact"] > 0, planned_bodies
    assert _bodies(stock.home, urls[1], PLANNED_SQL)["compact"] == 0
    if backend == "sqlite":  # the run shards' samples too (a refresh writes a shard per run)
        kinds = _ASSET_KINDS_SQL[:-1] + ", 'ASSET_MATERIALIZATION_PLANNED')"
        assert _run_shard_bodies(lean.home, kinds)["json"] == 0
        assert _run_shard_bodies(lean.home, kinds)["compact"] > 0
        assert _run_shard_bodies(stock.home, kinds)["compact"] == 0

    # Retention prunes both to the same reads.
    for chain in homes:
        with instance_of(chain.home) as instance:
            prune(instance.event_log_storage, RetentionPolicy(superseded_grace_seconds=0))
    assert every_read(lean)[:2] == every_read(stock)[:2]

    # `scrapeflow home expand` writes the bodies back as Dagster's JSON, for a home leaving
    # scrapeflow: none compact after, every one JSON, the reads unchanged.
    compact = (
        _bodies(lean.home, urls[0])["compact"] + _bodies(lean.home, urls[0], PLANNED_SQL)["compact"]
    )
    if backend == "sqlite":
        compact += _run_shard_bodies(lean.home, kinds)["compact"]
    done = subprocess.run(
        [sys.executable, "-m", "scrapeflow_dagster.cli", "home", "expand"],
        env=process_env(lean.home, lean.layout.root),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert f"event bodies written back as JSON: {compact:,}" in done.stdout
    assert _bodies(lean.home, urls[0]) == {"compact": 0, "json": _asset_rows(lean.home, urls[0])}
    assert _bodies(lean.home, urls[0], PLANNED_SQL)["compact"] == 0
    if backend == "sqlite":
        assert _run_shard_bodies(lean.home, kinds)["compact"] == 0
        shards = {path.name for path in (lean.home / "history" / "runs").glob("*.db")}
        assert ".db.db" not in shards, shards  # no shard made up by the expand
    assert every_read(lean)[:2] == every_read(stock)[:2]


_ASSET_KINDS_SQL = "('ASSET_MATERIALIZATION', 'ASSET_OBSERVATION')"
PLANNED_SQL = "('ASSET_MATERIALIZATION_PLANNED')"


def _query(home: Path, url: str | None, sql: str) -> list[tuple[Any, ...]]:
    """Rows of `sql` on the home's asset index (SQLite `index.db` or the Postgres database),
    read as stored: no reader of ours in between."""
    if url is None:
        with closing(sqlite3.connect(home / "history" / "runs" / "index.db")) as db:
            return db.execute(sql).fetchall()
    import psycopg2

    dsn = url.replace("postgresql+psycopg2://", "postgresql://", 1)
    with closing(psycopg2.connect(dsn)) as db, db.cursor() as cursor:
        cursor.execute(sql)
        return cursor.fetchall()


def _asset_rows(home: Path, url: str | None) -> int:
    sql = f"SELECT count(*) FROM event_logs WHERE dagster_event_type IN {_ASSET_KINDS_SQL}"
    return int(_query(home, url, sql)[0][0])


def _bodies(home: Path, url: str | None, kinds: str = _ASSET_KINDS_SQL) -> dict[str, int]:
    """How many bodies of events of `kinds` are stored compact, and how many as JSON (each
    parsed)."""
    sql = f"SELECT event FROM event_logs WHERE dagster_event_type IN {kinds}"
    counts = {"compact": 0, "json": 0}
    for (body,) in _query(home, url, sql):
        if body.startswith(COMPACT_PREFIX):
            counts["compact"] += 1
        else:
            assert json.loads(body)["__class__"] == "EventLogEntry"
            counts["json"] += 1
    return counts


def _run_shard_bodies(home: Path, kinds: str) -> dict[str, int]:
    """`_bodies` summed over the SQLite home's run shards (every `.db` but the index)."""
    counts = {"compact": 0, "json": 0}
    sql = f"SELECT event FROM event_logs WHERE dagster_event_type IN {kinds}"
    for shard in (home / "history" / "runs").glob("*.db"):  # `.db`: events outside any run
        if shard.name == "index.db":
            continue
        with closing(sqlite3.connect(shard)) as db:
            for (body,) in db.execute(sql).fetchall():
                compact = body.startswith(COMPACT_PREFIX)
                assert compact or json.loads(body)["__class__"] == "EventLogEntry"
                counts["compact" if compact else "json"] += 1
    return counts


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_lean_home_keeps_a_planned_row_only_where_a_read_needs_it(
    backend: str, site: SiteThread, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = None
    if backend == "postgres":  # the write-time delete, on (its default there is off)
        require_postgres_extra()
        url = request.getfixturevalue("postgres").database("lean_writes_planned")
    chain = ChainHome(
        _home(tmp_path, "lean", LeanWrites(), url),
        tmp_path / "data",
        task_rows(site, TASKS, tag=f"lean-planned-{backend}-"),
    )
    chain.run(forced=False, cwd=tmp_path)
    chain.run(forced=True, cwd=tmp_path)

    planned_type = f"'{PLANNED}'"
    count_sql = f"SELECT count(*) FROM event_logs WHERE dagster_event_type = {planned_type}"
    planned = _query(chain.home, url, count_sql)[0][0]
    # A planned row older than a materialisation of its partition, other than the newest
    # planned row of its asset when that materialisation came (the asset's latest run in the
    # UI): what lean writes delete.
    superseded = _query(
        chain.home,
        url,
        f"""SELECT p.asset_key, p.partition FROM event_logs p
        JOIN event_logs m ON m.asset_key = p.asset_key AND m.partition = p.partition
          AND m.dagster_event_type = 'ASSET_MATERIALIZATION' AND m.id > p.id
        WHERE p.dagster_event_type = {planned_type} AND p.id <> (
          SELECT max(id) FROM event_logs
          WHERE asset_key = p.asset_key AND dagster_event_type = {planned_type} AND id < m.id)""",
    )
    assert superseded == []
    # Two runs planned 3 x TASKS partitions each (240 rows, and more outside the runs for
    # the tasks a failure kept from later steps); left are the partitions the chain did not
    # materialise, run by run (retention prunes those of older runs), and one per asset.
    assert 0 < planned < 2 * TASKS, planned
