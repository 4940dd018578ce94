"""Which runs of the shipped location go in the run's own process (`scaleout.one_process_runs`):
the contract with Dagster's execution plans (an internal object, behind the version guard) and
the count of a run's tasks and shards. The runs themselves: `cli/test_step_server.py`."""

import dagster as dg
import pytest
from dagster._core.execution.api import create_execution_plan

from scrapeflow_dagster.scaleout.one_process_runs import (
    PARTITION_TAG,
    RANGE_END_TAG,
    RANGE_START_TAG,
    plan_is_a_line,
    run_task_count,
    shard_count,
)
from scrapeflow_dagster.scaleout.sizing import MIN_TASKS_PER_SHARD, SHARDS_ENV
from scrapeflow_dagster.storage.dagster_internals.version_guard import supports_dagster_version

CHAIN = ("scrape", "validation", "pages")


@pytest.fixture(scope="module")
def shipped_job() -> dg.JobDefinition:
    from scrapeflow_dagster.definitions import defs

    return defs.resolve_implicit_global_asset_job_def()


def plan_of(job: dg.JobDefinition, *assets: str):
    return create_execution_plan(job.get_subset(asset_selection={dg.AssetKey(a) for a in assets}))


def test_the_contract_holds_on_this_dagster() -> None:
    # Else every run silently keeps the multiprocess executor: `make compat` finds out.
    assert supports_dagster_version()


def test_the_sharded_chain_is_a_line_when_it_is_one_shard(shipped_job: dg.JobDefinition) -> None:
    plan = plan_of(shipped_job, *CHAIN)

    assert plan_is_a_line(plan, one_shard=lambda: True)
    assert not plan_is_a_line(plan, one_shard=lambda: False)


def test_a_lone_unsharded_step_is_a_line_without_counting_shards(
    shipped_job: dg.JobDefinition,
) -> None:
    def no_shards_here() -> bool:
        raise AssertionError("a plan without shard steps has no shards to count")

    assert plan_is_a_line(plan_of(shipped_job, "crawl_report"), one_shard=no_shards_here)


def test_steps_that_could_run_side_by_side_are_not_a_line(shipped_job: dg.JobDefinition) -> None:
    plan = plan_of(shipped_job, *CHAIN, "crawl_report")

    assert not plan_is_a_line(plan, one_shard=lambda: True)


def test_a_fan_out_of_someone_elses_is_not_a_line() -> None:
    @dg.op(out=dg.DynamicOut(int))
    def split():
        yield dg.DynamicOutput(1, mapping_key="one")

    @dg.op
    def work(n: int) -> int:
        return n

    @dg.job
    def fan_out():
        split().map(work)

    assert not plan_is_a_line(create_execution_plan(fan_out), one_shard=lambda: True)


@pytest.fixture
def instance():
    with dg.instance_for_test() as instance:
        yield instance


def test_a_runs_tasks_are_counted_from_its_partition_tags(instance: dg.DagsterInstance) -> None:
    keys = [f"t-{n:03d}" for n in range(40)]
    instance.add_dynamic_partitions("tasks", keys)

    assert run_task_count({PARTITION_TAG: "t-007"}, instance) == 1
    assert run_task_count({RANGE_START_TAG: "t-005", RANGE_END_TAG: "t-024"}, instance) == 20
    assert run_task_count({}, instance) is None
    # A key removed since the run was asked for: unknown (the run's plan step names it).
    assert run_task_count({RANGE_START_TAG: "t-005", RANGE_END_TAG: "gone"}, instance) is None


def test_shards_follow_the_deployment_and_the_run_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SHARDS_ENV, "2")

    assert shard_count(2 * MIN_TASKS_PER_SHARD - 1, {}) == 1
    assert shard_count(2 * MIN_TASKS_PER_SHARD, {}) == 2
    assert shard_count(None, {}) == 2
    config = {"resources": {"shard_settings": {"config": {"min_tasks_per_shard": 6}}}}
    assert shard_count(12, config) == 2
    config = {"resources": {"shard_settings": {"config": {"shards": 1}}}}
    assert shard_count(10 * MIN_TASKS_PER_SHARD, config) == 1
    monkeypatch.setenv(SHARDS_ENV, "1")
    assert shard_count(None, {}) == 1
