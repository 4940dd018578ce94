"""A run killed with SIGKILL while its step logs materialisations, on the batched storages
(SQLite and Postgres): it loses at most the step process's buffer, leaves consistent databases,
and the next run over the same range completes."""

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import dagster as dg
import pytest

from scrapeflow_dagster_tests.storage.events import STOCK_ROWS_YAML
from scrapeflow_dagster_tests.storage.homes import (
    add_partitions,
    instance_of,
    materialize,
    materialize_command,
    process_env,
    require_postgres_extra,
    write_home,
)
from scrapeflow_dagster_tests.storage.partitioned_defs import partition_key
from scrapeflow_dagster_tests.storage.snapshot import (
    MATERIALIZATION,
    PLANNED,
    asset_records,
    latest_materializations,
    run_shard_asset_events,
    states,
)
from scrapeflow_dagster_tests.support.postgres import PostgresServer

KEYS = [partition_key(i) for i in range(300)]
BUFFER_EVENTS = 25
KILL_AFTER_LOGGED = 110  # of 300, logged every 50 ms: about 10 s before the step would end
START_TIMEOUT_SECONDS = 120.0


def kill_when_logged(command: list[str], home: Path, progress: Path) -> int:
    """Start `command` in its own process group, SIGKILL the group once the step logged
    `KILL_AFTER_LOGGED` materialisations; returns how many it had logged."""
    process = subprocess.Popen(
        command,
        cwd=home,
        env=process_env(home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not progress.exists() or int(progress.read_text()) < KILL_AFTER_LOGGED:
            assert process.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "the step did not log in time"
            time.sleep(0.01)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    return int(progress.read_text())


def integrity(path: Path) -> str:
    with sqlite3.connect(path) as db:
        return str(db.execute("PRAGMA integrity_check").fetchone()[0])


@pytest.mark.slow  # about 30 s per storage: two CLI runs
@pytest.mark.parametrize("storage", ["sqlite", "postgres"])
def test_a_killed_run_loses_at_most_its_buffer_and_the_next_run_completes(
    storage: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = None
    if storage == "postgres":
        require_postgres_extra()
        server: PostgresServer = request.getfixturevalue("postgres")
        url = server.database("sigkill")
    home = write_home(
        tmp_path / "home",
        batched=True,
        # Every row stock writes, so that the run shard holds every batch it got (lean writes
        # land in the same transactions: `test_lean_writes`).
        options={"max_buffered_events": BUFFER_EVENTS, "lean_writes": STOCK_ROWS_YAML},
        postgres_url=url,
    )
    add_partitions(home, KEYS)
    progress = tmp_path / "progress"
    config = {"fail_every": 0, "delay_seconds": 0.05, "progress_file": str(progress)}

    logged = kill_when_logged(
        materialize_command("flaky", KEYS[0], KEYS[-1], config), home, progress
    )

    for shard in (home / "history" / "runs").glob("*.db"):
        assert integrity(shard) == "ok", shard
    with instance_of(home) as instance:
        (run,) = instance.get_runs()
        assert not run.is_finished  # killed: nobody recorded an end
        stored = [r.partition_key for r in asset_records(instance, "flaky", MATERIALIZATION)]
        # Batches land whole and in order: the stored ones are the first ones logged...
        assert stored == KEYS[: len(stored)]
        # ...and only what waited in the step process's buffer is lost.
        assert logged - BUFFER_EVENTS < len(stored) <= logged + 1
        assert len(asset_records(instance, "flaky", PLANNED)) == len(KEYS)
        in_run_shard = [
            partition
            for event_type, _, partition in run_shard_asset_events(instance, run.run_id)
            if event_type == MATERIALIZATION.value
        ]
        # A kill between a batch's run shard and index transactions leaves that batch in the
        # run shard only (stock Dagster has the same window for each event); Postgres has one
        # table and one transaction per batch.
        assert in_run_shard[: len(stored)] == stored
        assert len(in_run_shard) - len(stored) in ((0,) if url else (0, BUFFER_EVENTS))
        entry = instance.get_asset_records([dg.AssetKey("flaky")])[0].asset_entry
        last = entry.last_materialization_record
        assert last is not None and last.partition_key == stored[-1]

    rerun = materialize(home, "flaky", KEYS[0], KEYS[-1], {"fail_every": 0, "label": "rerun"})

    assert rerun.returncode == 0, rerun.stderr[-3000:]
    with instance_of(home) as instance:
        assert set(states(instance, "flaky", KEYS).values()) == {"MATERIALIZED"}
        latest = latest_materializations(instance, "flaky")
        assert {metadata["label"] for _, metadata in latest.values()} == {"rerun"}
