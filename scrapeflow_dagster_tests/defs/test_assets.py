"""The executor assets over partition ranges: one run per range, per-task outcomes in Dagster's
partition status, the status files and DuckDB, skips and forced re-runs."""

import subprocess
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest

from scrapeflow_dagster.dagster_cli import materialize_range_command
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.status import load_status
from scrapeflow_dagster.lib.partitions import tasks_partitions_def
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.defs.conftest import Materialize
from scrapeflow_dagster_tests.support.graphql import ui_partition_health
from scrapeflow_dagster_tests.support.ledger import query
from scrapeflow_dagster_tests.support.partitions import Status, keys_with, partition_statuses
from scrapeflow_dagster_tests.support.processes import process_env
from scrapeflow_dagster_tests.support.task_batches import TaskBatch
from scrapeflow_dagster_tests.support.tasks import TaskRows, store_and_add

FORCE = {"ops": {"executor_chain": {"config": {"force": True}}}}


class Tasks(TaskBatch):
    """The keys of one mixed batch, by what the site answers them."""

    def __init__(self, site: SiteThread) -> None:
        super().__init__()
        self.good: set[str] = set()
        self.missing: set[str] = set()  # 404: permanent
        self.flaky: set[str] = set()  # 503 forever: transient, retried, still failing
        self.captcha: set[str] = set()  # 200 with a block page: scrape succeeds
        for n in range(50):
            self.add(self.good, f"good-{n:03d}", site.url(f"/page/{n}"))
            if n % 10 == 4:
                self.add(self.missing, f"missing-{n:03d}", site.url("/status/404"))
            if n % 10 == 9:
                self.add(self.flaky, f"flaky-{n:03d}", site.url(f"/flaky/assets-{n}?fail=-1"))
            if n in (20, 40):
                self.add(self.captcha, f"captcha-{n:03d}", site.url("/captcha"))

    @property
    def scrape_failed(self) -> set[str]:
        return self.missing | self.flaky


@pytest.fixture
def tasks(site_thread: SiteThread, add_task_rows: Callable[[TaskRows], list[str]]) -> Tasks:
    batch = Tasks(site_thread)
    assert add_task_rows(batch.rows) == batch.keys
    assert len(batch.keys) == 62
    return batch


def materialized_partitions(result: dg.ExecuteInProcessResult, asset: str) -> dict[str, dict]:
    """Partition -> metadata values of the materialisations a run logged for `asset`."""
    return {
        str(m.partition): {k: v.value for k, v in m.metadata.items()}
        for m in result.asset_materializations_for_node("executor_chain")
        if m.asset_key == dg.AssetKey(asset)
    }


def partition_observations(result: dg.ExecuteInProcessResult, asset: str) -> dict[str, dict]:
    """Partition -> metadata values of the observations a run logged for `asset`."""
    found = {}
    for event in result.all_events:
        if event.event_type_value == "ASSET_OBSERVATION":
            observation = event.asset_observation_data.asset_observation
            if observation.asset_key == dg.AssetKey(asset):
                found[str(observation.partition)] = {
                    k: v.value for k, v in observation.metadata.items()
                }
    return found


def test_every_partition_of_a_run_with_failures_says_its_url_and_outcome(
    tasks: Tasks, materialize_range: Materialize
) -> None:
    result = materialize_range("scrape", tasks.keys[0], tasks.keys[-1])

    done = materialized_partitions(result, "scrape")
    for key, meta in done.items():
        assert meta["url"] == tasks.urls[key] and meta["http_status"] == 200, key
        assert meta["size"] > 0 and meta["attempts"] == 1
    failed = partition_observations(result, "scrape")
    assert set(failed) == tasks.scrape_failed
    for key in tasks.missing:
        assert failed[key] == {
            "url": tasks.urls[key],
            "error_kind": "permanent",
            "error_class": "HttpStatusError",
            "message": "HTTP response 404",
            "attempts": 1,
            "http_status": 404,
        }
    for key in tasks.flaky:
        assert failed[key]["error_kind"] == "transient" and failed[key]["http_status"] == 503


def step_rows(layout: DataLayout, executor: str) -> dict[str, tuple]:
    """key -> (status, error_class, error_kind, http_status, attempts) of the latest step."""
    rows = query(
        layout.db_path,
        "SELECT key, status, error_class, error_kind, http_status, attempts "
        "FROM current_state WHERE executor = ?",
        [executor],
    )
    return {row[0]: tuple(row[1:]) for row in rows}


def step_run_counts(layout: DataLayout, executor: str) -> dict[str, int]:
    sql = "SELECT key, count(*) FROM step_runs WHERE executor = ? GROUP BY key"
    return dict(query(layout.db_path, sql, [executor]))


def last_runs(layout: DataLayout, keys: set[str], executor: str = "scrape") -> dict[str, str]:
    found = {}
    for key in keys:
        status = load_status(layout.status_dir, key)
        assert status is not None, key
        found[key] = status[f"{executor}_last_run"]
    return found


def test_scrape_range_fails_exactly_the_failed_tasks(
    tasks: Tasks, layout: DataLayout, instance: dg.DagsterInstance, materialize_range: Materialize
) -> None:
    result = materialize_range("scrape", tasks.keys[0], tasks.keys[-1])

    assert not result.success
    failure = result.failure_data_for_node("executor_chain")
    assert failure is not None
    assert "10 of 62 tasks failed" in str(failure.user_failure_data.description)

    found = partition_statuses(instance, "scrape", tasks.keys)
    assert keys_with(found, Status.FAILED) == tasks.scrape_failed
    assert keys_with(found, Status.MATERIALIZED) == tasks.good | tasks.captcha

    events = materialized_partitions(result, "scrape")
    assert set(events) == tasks.good | tasks.captcha
    assert {meta["http_status"] for meta in events.values()} == {200}
    assert all(meta["attempts"] == 1 for meta in events.values())

    checks = result.get_asset_check_evaluations()
    assert [(c.check_name, c.passed) for c in checks] == [("no_failed_tasks", False)]
    assert checks[0].metadata["failed"].value == 10

    rows = step_rows(layout, "scrape")
    assert set(rows) == set(tasks.keys)
    for key in tasks.good | tasks.captcha:
        assert rows[key] == ("SUCCESS", None, None, 200, 1), key
    for key in tasks.missing:
        assert rows[key] == ("ERROR", "HttpStatusError", "permanent", 404, 1), key
    for key in tasks.flaky:
        assert rows[key] == ("ERROR", "HttpStatusError", "transient", 503, 2), key

    for key in tasks.keys:
        status = load_status(layout.status_dir, key)
        assert status is not None
        if key in tasks.scrape_failed:
            code = 404 if key in tasks.missing else 503
            assert status["scrape_status"] == f"ERROR HttpStatusError::HTTP response {code}"
            assert status["scrape_failures"] == 1
            assert not (layout.status_dir / f"{key}.scrape").exists()
        else:
            assert status["scrape_status"] == "SUCCESS"
            assert status["scrape"]["http_status"] == 200
            assert (layout.status_dir / f"{key}.scrape").stat().st_size == status["scrape"]["size"]


def test_range_where_every_task_succeeds_materialises_each_partition(
    tasks: Tasks, instance: dg.DagsterInstance, materialize_range: Materialize
) -> None:
    first, last = "good-000", "good-003"

    result = materialize_range("scrape", first, last)

    assert result.success
    keys = tasks.keys[: tasks.keys.index(last) + 1]
    assert partition_statuses(instance, "scrape", keys) == dict.fromkeys(keys, Status.MATERIALIZED)
    rest = tasks.keys[len(keys) :]
    assert partition_statuses(instance, "scrape", rest) == dict.fromkeys(rest)
    assert [c.passed for c in result.get_asset_check_evaluations()] == [True]
    # One materialisation per partition, each with its own metadata.
    events = list(result.asset_materializations_for_node("executor_chain"))
    assert sorted(str(m.partition) for m in events) == sorted(keys)
    for event in events:
        meta = {k: v.value for k, v in event.metadata.items()}
        key = str(event.partition)
        assert meta["url"] == tasks.urls[key] and meta["http_status"] == 200, (key, meta)
        assert meta["size"] > 0 and meta["attempts"] == 1 and len(meta["md5"]) == 32


def test_validation_fails_captcha_pages_and_keeps_their_scrape(
    tasks: Tasks, layout: DataLayout, instance: dg.DagsterInstance, materialize_range: Materialize
) -> None:
    materialize_range("scrape", tasks.keys[0], tasks.keys[-1])

    result = materialize_range("validation", tasks.keys[0], tasks.keys[-1])

    assert not result.success
    found = partition_statuses(instance, "validation", tasks.keys)
    assert keys_with(found, Status.MATERIALIZED) == tasks.good
    assert tasks.captcha <= keys_with(found, Status.FAILED)
    assert partition_statuses(instance, "scrape", sorted(tasks.captcha)) == dict.fromkeys(
        sorted(tasks.captcha), Status.MATERIALIZED
    )

    rows = step_rows(layout, "validation")
    assert set(rows) == tasks.good | tasks.captcha  # tasks without a scrape never ran
    for key in tasks.captcha:
        assert rows[key][:3] == ("ERROR", "BlockedError", "blocked")
        status = load_status(layout.status_dir, key)
        assert status is not None
        assert status["validation_status"].startswith("ERROR BlockedError::block page")
        assert status["scrape_status"] == "SUCCESS"
    for key in tasks.scrape_failed:
        status = load_status(layout.status_dir, key)
        assert status is not None and "validation_status" not in status


def test_validation_leaves_tasks_without_scrape_missing(
    tasks: Tasks, instance: dg.DagsterInstance, materialize_range: Materialize
) -> None:
    materialize_range("scrape", tasks.keys[0], tasks.keys[-1])
    last = "good-019"  # before the first captcha task: no validation fails in this range
    keys = tasks.keys[: tasks.keys.index(last) + 1]

    result = materialize_range("validation", keys[0], last)

    assert result.success
    found = partition_statuses(instance, "validation", keys)
    not_ready = tasks.scrape_failed & set(keys)
    assert not_ready, "the range should hold tasks whose scrape failed"
    assert keys_with(found, None) == not_ready
    assert keys_with(found, Status.MATERIALIZED) == set(keys) - not_ready
    checks = result.get_asset_check_evaluations()
    assert checks[0].passed and checks[0].metadata["not_ready"].value == len(not_ready)


def test_validation_run_with_failures_leaves_tasks_without_scrape_missing(
    tasks: Tasks, instance: dg.DagsterInstance, materialize_range: Materialize
) -> None:
    materialize_range("scrape", tasks.keys[0], tasks.keys[-1])
    validation = dg.AssetKey("validation")

    # The second run reads and updates the status cache the first one left.
    for _ in range(2):
        result = materialize_range("validation", tasks.keys[0], tasks.keys[-1])

        assert not result.success  # the captcha tasks fail validation
        found = partition_statuses(instance, "validation", tasks.keys)
        assert keys_with(found, Status.FAILED) == tasks.captcha
        assert keys_with(found, None) == tasks.scrape_failed
        assert keys_with(found, Status.MATERIALIZED) == tasks.good
        checks = result.get_asset_check_evaluations()
        assert [(c.passed, c.metadata["failed"].value) for c in checks] == [(False, 2)]
        assert checks[0].metadata["not_ready"].value == len(tasks.scrape_failed)
        # The asset's latest run in the UI is still the run that failed.
        latest = instance.get_latest_planned_materialization_info(validation)
        assert latest is not None and latest.run_id == result.run_id

    # Computed from the events alone (no status cache), as a fresh instance would.
    from dagster._core.definitions.partitions.context import partition_loading_context
    from dagster._core.storage.partition_status_cache import (
        build_failed_and_in_progress_partition_subset,
    )

    with partition_loading_context(None, instance):
        failed, in_progress, _ = build_failed_and_in_progress_partition_subset(
            instance, validation, tasks_partitions_def, last_planned_materialization_storage_id=1
        )
    assert set(failed.get_partition_keys()) == tasks.captcha
    assert not set(in_progress.get_partition_keys())


def test_rerun_skips_succeeded_tasks_unless_forced(
    tasks: Tasks, layout: DataLayout, instance: dg.DagsterInstance, materialize_range: Materialize
) -> None:
    first, last = tasks.keys[0], tasks.keys[-1]
    succeeded = tasks.good | tasks.captcha
    materialize_range("scrape", first, last)
    before = last_runs(layout, succeeded)
    failed_before = last_runs(layout, tasks.scrape_failed)

    again = materialize_range("scrape", first, last)

    assert last_runs(layout, succeeded) == before
    failed_after = last_runs(layout, tasks.scrape_failed)
    assert all(failed_after[k] > failed_before[k] for k in tasks.scrape_failed)
    events = materialized_partitions(again, "scrape")
    assert set(events) == succeeded
    assert all(meta.get("skipped") is True for meta in events.values())
    found = partition_statuses(instance, "scrape", tasks.keys)
    assert keys_with(found, Status.FAILED) == tasks.scrape_failed
    assert keys_with(found, Status.MATERIALIZED) == succeeded
    counts = step_run_counts(layout, "scrape")
    assert {counts[k] for k in succeeded} == {1}  # skips are not recorded as step runs
    assert {counts[k] for k in tasks.scrape_failed} == {2}

    forced = materialize_range("scrape", first, last, run_config=FORCE)

    after = last_runs(layout, succeeded)
    assert all(after[k] > before[k] for k in succeeded)
    assert not any(
        meta.get("skipped") for meta in materialized_partitions(forced, "scrape").values()
    )
    assert {step_run_counts(layout, "scrape")[k] for k in succeeded} == {2}
    found = partition_statuses(instance, "scrape", tasks.keys)
    assert keys_with(found, Status.MATERIALIZED) == succeeded


def test_through_the_cli_the_ui_shows_failed_tasks_failed_and_unattempted_ones_missing(
    site_thread: SiteThread, layout: DataLayout, dagster_home: Path
) -> None:
    good = [(f"good-{n:03d}", site_thread.url(f"/page/{n}")) for n in range(6)]
    missing = [(f"missing-{n}", site_thread.url("/status/404")) for n in range(2)]
    captcha = [(f"captcha-{n}", site_thread.url("/captcha")) for n in range(2)]
    rows = [*good[:3], missing[0], captcha[0], *good[3:], missing[1], captcha[1]]
    keys = [key for key, _ in rows]
    with dg.DagsterInstance.get() as instance:
        assert store_and_add(layout, instance, rows) == keys
    env = process_env(dagster_home, layout.root)

    for asset in ("scrape", "validation"):
        done = subprocess.run(
            materialize_range_command(asset, keys[0], keys[-1]),
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]

    with dg.DagsterInstance.get() as instance:
        assert ui_partition_health(instance, "validation") == {
            "materializedPartitions": {key for key, _ in good},
            "materializingPartitions": set(),
            "failedPartitions": {key for key, _ in captcha},
        }  # the 404s, never scraped, are missing: a "failed and missing" backfill takes them
        assert ui_partition_health(instance, "scrape")["failedPartitions"] == {
            key for key, _ in missing
        }
