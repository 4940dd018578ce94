"""The batched event logs through the real `dagster asset materialize`, against stock Dagster.

The same three runs on a stock home and a batched one, on SQLite and on Postgres: `flaky` over
300 partitions (10 fail), `flaky` again over 100 of them (none fail), `trivial` over all 300.
Then the states, the event counts, the latest materialisation of each partition, what the UI's
partition health query answers and the rows Dagster reads for assets must be the expected
ones, and the same in both homes. A Dagster upgrade fails here first: add a version to
`VERIFIED` only once these pass on it (`make compat` runs them on the newest 1.13 patch).
"""

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster._core.events import DagsterEventType

from scrapeflow_dagster.storage.dagster_internals.version_guard import (
    ADMIT_INSTALLED_ENV,
    VERIFIED,
    installed_version,
)
from scrapeflow_dagster.storage.sqlite.event_log import BatchedSqliteEventLogStorage
from scrapeflow_dagster_tests.storage.events import STOCK_ROWS_YAML
from scrapeflow_dagster_tests.storage.homes import (
    DEFS_MODULE,
    HAS_POSTGRES_EXTRA,
    NO_POSTGRES_EXTRA,
    add_partitions,
    instance_of,
    materialize,
    require_postgres_extra,
    write_home,
)
from scrapeflow_dagster_tests.storage.partitioned_defs import fails, partition_key
from scrapeflow_dagster_tests.storage.snapshot import (
    ASSET_EVENT_TYPES,
    asset_snapshot,
    index_shard_rows,
    postgres_rows,
    run_positions,
    states,
)
from scrapeflow_dagster_tests.support.graphql import ui_partition_health
from scrapeflow_dagster_tests.support.postgres import PostgresServer

KEYS = [partition_key(i) for i in range(300)]
FAIL_EVERY = 30  # partitions 7, 37, ..., 277 fail in the first run
SECOND_KEYS = KEYS[100:200]  # run again, none failing
SECOND_CONFIG = {"fail_every": 0, "label": "second"}


@dataclass
class HomeResult:
    """What one home holds after the three runs."""

    home: Path
    exit_codes: list[int]
    states_after_first: dict[str, str | None]
    flaky: dict[str, Any]
    trivial: dict[str, Any]
    index: dict[str, Any]
    buffered_at_failure: int
    storage_class: type
    ui: dict[str, dict[str, set[str]]]


def _checked(done: subprocess.CompletedProcess[str]) -> int:
    if done.returncode not in (0, 1) or "Traceback" in done.stdout:
        raise AssertionError(f"the CLI broke:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.returncode


def _buffered_at_failure(instance: dg.DagsterInstance, run_id: str) -> int:
    records = instance.get_records_for_run(
        run_id, of_type=DagsterEventType.STEP_FAILURE, limit=10
    ).records
    failure = records[0].event_log_entry.get_dagster_event().step_failure_data
    assert failure.user_failure_data is not None
    return int(failure.user_failure_data.metadata["buffered_events"].value)  # type: ignore[arg-type]


def run_three_times(home: Path, postgres_url: str | None = None) -> HomeResult:
    add_partitions(home, KEYS)
    codes = [_checked(materialize(home, "flaky", KEYS[0], KEYS[-1]))]
    with instance_of(home) as instance:  # also caches the status, updated on the next read
        after_first = states(instance, "flaky", KEYS)
    codes.append(
        _checked(materialize(home, "flaky", SECOND_KEYS[0], SECOND_KEYS[-1], SECOND_CONFIG))
    )
    codes.append(_checked(materialize(home, "trivial", KEYS[0], KEYS[-1])))
    with instance_of(home) as instance:
        first_run = next(iter(run_positions(instance)))
        result = HomeResult(
            home=home,
            exit_codes=codes,
            states_after_first=after_first,
            flaky=asset_snapshot(instance, home, "flaky", KEYS),
            trivial=asset_snapshot(instance, home, "trivial", KEYS),
            index={},
            buffered_at_failure=_buffered_at_failure(instance, first_run),
            storage_class=type(instance.event_log_storage),
            ui={
                asset: ui_partition_health(instance, asset, module=DEFS_MODULE)
                for asset in ("flaky", "trivial")
            },
        )
        positions = run_positions(instance)
    if postgres_url is None:
        result.index = index_shard_rows(home, positions)
    else:
        result.index = postgres_rows(postgres_url, positions)
    return result


# The batched homes here write every row stock Dagster writes (lean writes off): these tests
# pin the batching to stock's rows; `test_lean_writes` pins what lean writes leave out.
STOCK = {"lean_writes": STOCK_ROWS_YAML}


@pytest.fixture(scope="module")
def stock(tmp_path_factory: pytest.TempPathFactory) -> HomeResult:
    return run_three_times(write_home(tmp_path_factory.mktemp("stock") / "home", batched=False))


@pytest.fixture(scope="module")
def batched(tmp_path_factory: pytest.TempPathFactory) -> HomeResult:
    home = write_home(tmp_path_factory.mktemp("batched") / "home", batched=True, options=STOCK)
    return run_three_times(home)


def _postgres_home(
    tmp_path_factory: pytest.TempPathFactory, postgres: PostgresServer, name: str, batched: bool
) -> HomeResult:
    require_postgres_extra()
    url = postgres.database(name)
    options = STOCK if batched else None
    home = write_home(
        tmp_path_factory.mktemp(name) / "home", batched=batched, postgres_url=url, options=options
    )
    return run_three_times(home, url)


@pytest.fixture(scope="module")
def pg_stock(tmp_path_factory: pytest.TempPathFactory, postgres: PostgresServer) -> HomeResult:
    return _postgres_home(tmp_path_factory, postgres, "stock", batched=False)


@pytest.fixture(scope="module")
def pg_batched(tmp_path_factory: pytest.TempPathFactory, postgres: PostgresServer) -> HomeResult:
    return _postgres_home(tmp_path_factory, postgres, "batched", batched=True)


def _batched_postgres_class() -> type:
    from scrapeflow_dagster.storage.postgres.event_log import BatchedPostgresEventLogStorage

    return BatchedPostgresEventLogStorage


STORAGES = {
    "sqlite": ("batched", "stock", lambda: BatchedSqliteEventLogStorage),
    "postgres": ("pg_batched", "pg_stock", _batched_postgres_class),
}


@dataclass
class Pair:
    """The batched and the stock home of one storage after the same runs."""

    batched: HomeResult
    stock: HomeResult
    batched_class: type


@pytest.fixture(params=list(STORAGES))
def pair(request: pytest.FixtureRequest) -> Pair:
    batched_name, stock_name, batched_class = STORAGES[request.param]
    return Pair(
        request.getfixturevalue(batched_name),
        request.getfixturevalue(stock_name),
        batched_class(),
    )


@pytest.mark.parametrize("package", list(VERIFIED))
def test_dagster_is_a_verified_version(package: str) -> None:
    found = installed_version(package)
    if found is None and package == "dagster-postgres" and not HAS_POSTGRES_EXTRA:
        pytest.skip(NO_POSTGRES_EXTRA)
    if os.environ.get(ADMIT_INSTALLED_ENV) == "1":
        return  # `make compat` checking a version: the tests beside this one decide
    assert found in VERIFIED[package], (
        f"{package} {found}: the batched storages now store events one by one. Run"
        " `make compat` on it, check what changed in SqliteEventLogStorage and"
        " PostgresEventLogStorage (store_event, _store_asset_event, _store_asset_event_tags) and"
        " in the UI's partition health, then add it to VERIFIED."
    )


def test_the_batched_home_buffers_in_the_step_process(pair: Pair) -> None:
    assert pair.batched.storage_class is pair.batched_class
    # All 290 materialisations of the first run were still waiting when the step failed:
    # nothing between two `log_event` calls wrote them one by one.
    assert pair.batched.buffered_at_failure == 290
    assert pair.stock.buffered_at_failure == -1


def test_the_batched_home_ends_in_the_expected_states(pair: Pair) -> None:
    batched = pair.batched
    assert batched.exit_codes == [1, 0, 0]
    assert batched.states_after_first == {
        key: "FAILED" if fails(key, FAIL_EVERY) else "MATERIALIZED" for key in KEYS
    }
    still_failed = [key for key in KEYS if fails(key, FAIL_EVERY) and key not in SECOND_KEYS]
    assert len(still_failed) == 7
    assert batched.flaky["states"] == {"FAILED": 7, "MATERIALIZED": 293}
    assert batched.trivial["states"] == {"MATERIALIZED": 300}
    assert (batched.flaky["materializations"], batched.flaky["planned"]) == (390, 400)
    assert (batched.trivial["materializations"], batched.trivial["planned"]) == (300, 300)


def test_the_ui_shows_the_expected_partition_health(pair: Pair) -> None:
    still_failed = {key for key in KEYS if fails(key, FAIL_EVERY) and key not in SECOND_KEYS}
    expected = {
        "flaky": {
            "materializedPartitions": set(KEYS) - still_failed,
            "materializingPartitions": set(),
            "failedPartitions": still_failed,
        },
        "trivial": {
            "materializedPartitions": set(KEYS),
            "materializingPartitions": set(),
            "failedPartitions": set(),
        },
    }
    assert pair.batched.ui == expected
    assert pair.stock.ui == expected


def test_the_batched_home_keeps_the_latest_materialization_of_each_partition(pair: Pair) -> None:
    batched = pair.batched
    expected = {
        key: (1, {"number": int(key[1:]), "label": "second"})
        if key in SECOND_KEYS
        else (0, {"number": int(key[1:]), "label": "first"})
        for key in KEYS
        if key in SECOND_KEYS or not fails(key, FAIL_EVERY)
    }
    assert batched.flaky["latest"] == expected
    assert batched.flaky["last_run"] == 1
    assert batched.flaky["last_materialization_is_latest"]
    assert batched.trivial["last_run"] == 2
    assert batched.trivial["last_materialization"][1] in KEYS


def test_the_batched_home_reads_back_as_the_stock_home(pair: Pair) -> None:
    batched, stock = pair.batched, pair.stock
    assert batched.exit_codes == stock.exit_codes
    assert batched.states_after_first == stock.states_after_first
    for asset in ("flaky", "trivial"):
        for name, value in getattr(stock, asset).items():
            if (
                name == "last_materialization"
                and pair.batched_class is not BatchedSqliteEventLogStorage
            ):
                # Postgres ids count every process's events, interleaved differently per home.
                value, found = value[1], getattr(batched, asset)[name][1]
                assert found == value, (asset, name)
                continue
            assert getattr(batched, asset)[name] == value, (asset, name)


def test_the_index_shard_holds_the_same_rows_as_the_stock_one(
    batched: HomeResult, stock: HomeResult
) -> None:
    # Three runs of 300, 100 and 300 partitions: planned and materialised events of 700 and
    # 690 partitions, and each run's start and end (mirrored for the run status).
    assert len(stock.index["events"]) == 700 + 690 + 6
    assert batched.index["events"] == stock.index["events"]
    assert len(stock.index["tags"]) == 300  # one data version tag per `trivial` materialisation
    assert batched.index["tags"] == stock.index["tags"]
    assert batched.index["asset_keys"] == stock.index["asset_keys"]


def test_postgres_holds_the_same_asset_rows_as_stock_dagster_postgres(
    pg_batched: HomeResult, pg_stock: HomeResult
) -> None:
    # Planned and materialised events of 700 and 690 partitions, in the same order.
    assert len(pg_stock.index["events"]) == 700 + 690
    assert pg_batched.index["events"] == pg_stock.index["events"]
    assert len(pg_stock.index["tags"]) == 300  # one data version tag per `trivial` materialisation
    assert pg_batched.index["tags"] == pg_stock.index["tags"]
    assert pg_batched.index["asset_keys"] == pg_stock.index["asset_keys"]


@pytest.mark.parametrize("home", ["stock", "batched"])
def test_each_runs_asset_events_are_in_the_same_order_in_both_shards(
    home: str, request: pytest.FixtureRequest
) -> None:
    result: HomeResult = request.getfixturevalue(home)
    asset_types = {event_type.value for event_type in ASSET_EVENT_TYPES}
    for position, run_shard in result.flaky["run_shards"].items():
        index = [
            (event_type, asset_key, partition)
            for _, run, event_type, asset_key, partition, _ in result.index["events"]
            if run == position and event_type in asset_types
        ]
        assert len(run_shard) >= 200
        assert run_shard == index, position
