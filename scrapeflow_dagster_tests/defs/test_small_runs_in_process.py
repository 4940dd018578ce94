"""The shipped code location's sensors ask for Dagster's in-process executor for runs that are
one shard (each step would otherwise be a process of its own, seconds per step), and leave
runs of several shards, and code locations on another executor, to the multiprocess default."""

import dagster as dg
import pytest

from scrapeflow_dagster.defs.automation import IN_PROCESS_EXECUTION
from scrapeflow_dagster.defs.factory import scrapeflow_definitions
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.scaleout.local import local_executor
from scrapeflow_dagster.scaleout.sizing import MIN_TASKS_PER_SHARD, SHARDS_ENV
from scrapeflow_dagster_tests.support.sensors import sensor_context


def inbox_requests(
    defs: dg.Definitions, instance: dg.DagsterInstance, layout: DataLayout, count: int
) -> list[dg.RunRequest]:
    lines = ["key,url", *(f"t-{n:05d},http://127.0.0.1:9/page/{n}" for n in range(count))]
    (layout.inbox_dir / f"tasks-{count}.csv").write_text("\n".join(lines) + "\n")
    sensor = defs.get_sensor_def("inbox_sensor")
    result = sensor(sensor_context(instance, layout.root))
    assert isinstance(result, dg.SensorResult), result
    return list(result.run_requests or [])


@pytest.fixture
def shipped_defs(monkeypatch: pytest.MonkeyPatch) -> dg.Definitions:
    monkeypatch.delenv("SCRAPEFLOW_CELERY_BROKER", raising=False)
    monkeypatch.setenv(SHARDS_ENV, "2")  # as on this 2-core machine, whatever the host has
    from scrapeflow_dagster.defs.assets import executor_assets

    # As `scrapeflow_dagster.definitions` builds them.
    return scrapeflow_definitions(executor_assets, executor=local_executor())


def test_a_one_shard_run_asks_for_the_in_process_executor(
    shipped_defs: dg.Definitions, instance: dg.DagsterInstance, layout: DataLayout
) -> None:
    (small,) = inbox_requests(shipped_defs, instance, layout, 40)

    assert small.run_config["execution"] == IN_PROCESS_EXECUTION["execution"]
    # A config the shipped job takes (raises otherwise, as the daemon would refuse the run).
    dg.validate_run_config(shipped_defs.resolve_implicit_global_asset_job_def(), small.run_config)


def test_a_run_of_several_shards_keeps_the_multiprocess_default(
    shipped_defs: dg.Definitions, instance: dg.DagsterInstance, layout: DataLayout
) -> None:
    (large,) = inbox_requests(shipped_defs, instance, layout, 2 * MIN_TASKS_PER_SHARD)

    assert "execution" not in large.run_config


def test_unsharded_runs_are_in_process_whatever_their_size(
    shipped_defs: dg.Definitions,
    instance: dg.DagsterInstance,
    layout: DataLayout,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(SHARDS_ENV, "1")

    (run,) = inbox_requests(shipped_defs, instance, layout, 2 * MIN_TASKS_PER_SHARD)

    assert run.run_config["execution"] == IN_PROCESS_EXECUTION["execution"]


def test_a_location_on_another_executor_gets_no_executor_config(
    instance: dg.DagsterInstance, layout: DataLayout, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SHARDS_ENV, "2")
    from scrapeflow_dagster.defs.assets import executor_assets

    defs = scrapeflow_definitions(executor_assets, executor=dg.multiprocess_executor)

    (small,) = inbox_requests(defs, instance, layout, 40)

    assert "execution" not in small.run_config
