"""Runs whose steps can only follow one another run them in the run's own process.

Dagster's multiprocess executor gives every step a process of its own. That pays when steps run
side by side (a run of several shards); a run whose plan is a line of steps (a one-shard chain
run: plan, shard, collect; a lone report asset) gains nothing from it and pays the first step's
process start: measured on 2 cores (2026-11-27), the demo's 305-task chain run through
`dagster asset materialize` took 8.9-9.7 s with its steps forked from the step server, 5.4 s in
the command's process (its first step waited 2.75 s for the server to import the location).

So the shipped location's executor (`scaleout.local.local_executor`) looks at each run as it
starts, wherever it was launched (`dagster asset materialize`, the UI, a backfill, a sensor):
left at its default config, it runs a one-step-at-a-time run in process and any other run on
the multiprocess executor. A run config that sets the executor (`multiprocess: {...}`,
`in_process: {}`) is obeyed as given.

The plan's shape is read from Dagster's execution plan, an internal object: on a Dagster
version not verified (`storage.version_guard`), every run keeps the multiprocess executor.
"""

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import dagster as dg

from scrapeflow_dagster.lib.partitions import (
    PARTITION_TAG,
    RANGE_END_TAG,
    RANGE_START_TAG,
    TASKS_PARTITIONS_NAME,
)
from scrapeflow_dagster.scaleout.shards import SHARD_TAG
from scrapeflow_dagster.scaleout.sizing import MIN_TASKS_PER_SHARD, configured_shards, shards_for
from scrapeflow_dagster.storage.dagster_internals.version_guard import supports_dagster_version
from scrapeflow_dagster.storage.planned.freed_memory import give_back_freed_memory

if TYPE_CHECKING:
    from dagster._core.execution.context.system import PlanOrchestrationContext
    from dagster._core.execution.plan.plan import ExecutionPlan

SHARD_SETTINGS_RESOURCE = "shard_settings"
FALLBACK = "every run keeps the multiprocess executor, whatever its plan"


class SequentialRunsInProcess(dg.Executor):
    """The multiprocess executor, except for runs whose steps can only run one at a time:
    those run in the run's process on the in-process executor (same retry settings)."""

    def __init__(
        self,
        multiprocess: dg.Executor,
        in_process: dg.Executor,
        before_in_process: Callable[[], object] = lambda: None,
    ) -> None:
        self.multiprocess = multiprocess
        self.in_process = in_process
        self.before_in_process = before_in_process

    @property
    def retries(self) -> Any:
        """The run's retry mode, the same for both executors (both built from one config)."""
        return self.multiprocess.retries

    @property
    def step_dependency_config(self) -> Any:
        return self.multiprocess.step_dependency_config

    def execute(
        self, plan_context: "PlanOrchestrationContext", execution_plan: "ExecutionPlan"
    ) -> Iterator[Any]:
        """Run the plan in this process when it is a line of steps, else on the multiprocess
        executor."""
        # Creating a run of many partitions freed most of what it allocated (keys read, planned
        # rows built): the pages go back before the steps start, not at this process's end.
        give_back_freed_memory()
        if runs_one_step_at_a_time(plan_context, execution_plan):
            self.before_in_process()
            yield from self.in_process.execute(plan_context, execution_plan)
        else:
            yield from self.multiprocess.execute(plan_context, execution_plan)


def runs_one_step_at_a_time(
    plan_context: "PlanOrchestrationContext", execution_plan: "ExecutionPlan"
) -> bool:
    """Whether no two steps of the run could run at once (`plan_is_a_line`, its shard steps
    counted for the run's tasks and shard settings)."""
    if not supports_dagster_version(fallback=FALLBACK):
        return False

    def one_shard() -> bool:
        tasks = run_task_count(plan_context.dagster_run.tags, plan_context.instance)
        return shard_count(tasks, plan_context.run_config) == 1

    return plan_is_a_line(execution_plan, one_shard)


def plan_is_a_line(execution_plan: "ExecutionPlan", one_shard: Callable[[], bool]) -> bool:
    """Whether every level of the plan's steps to run holds one step, and each mapped step is a
    sharded asset's shard step (tagged `SHARD_TAG`) of a run that `one_shard` says is one
    shard: another mapped step's width is unknown until its upstream step runs."""
    to_run = set(execution_plan.step_keys_to_execute)
    levels = [
        [step for step in level if step.key in to_run]
        for level in execution_plan.get_all_steps_by_level()
    ]
    if any(len(level) > 1 for level in levels):
        return False
    mapped = [step for level in levels for step in level if step.kind.value == "UNRESOLVED_MAPPED"]
    if any((step.tags or {}).get(SHARD_TAG) != "true" for step in mapped):
        return False
    return not mapped or one_shard()


def run_task_count(tags: Mapping[str, str], instance: dg.DagsterInstance) -> int | None:
    """How many tasks (partitions of `tasks`) a run with `tags` covers; None when its tags
    name none, or name keys the instance does not hold."""
    if PARTITION_TAG in tags:
        return 1
    first, last = tags.get(RANGE_START_TAG), tags.get(RANGE_END_TAG)
    if first is None or last is None:
        return None
    keys = instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME)
    try:
        return keys.index(last) - keys.index(first) + 1
    except ValueError:  # a key no longer there: the run's own plan step reports it
        return None


def shard_count(tasks: int | None, run_config: Mapping[str, Any]) -> int:
    """The shards a sharded asset's plan step makes for `tasks` tasks (None: unknown, the most
    allowed), by the deployment's shard settings and those the run config gives
    (`scaleout.shards.ShardSettingsResource`)."""
    resources = run_config.get("resources") or {}
    given = (resources.get(SHARD_SETTINGS_RESOURCE) or {}).get("config") or {}
    shards = given.get("shards") or configured_shards()
    if tasks is None:
        return shards
    return shards_for(tasks, shards, given.get("min_tasks_per_shard", MIN_TASKS_PER_SHARD))


def sequential_runs_in_process(
    init_context: dg.InitExecutorContext,
    default_config: Mapping[str, Any],
    before_in_process: Callable[[], object] = lambda: None,
) -> dg.Executor:
    """The executor for `init_context`: Dagster's default one as its config asks, wrapped in
    `SequentialRunsInProcess` when that config is the location's default (`default_config`,
    whose multiprocess mode it keeps for the runs that need it).

    Args:
        init_context: the run's executor context.
        default_config: the executor config of the location's default (`forkserver_config`).
        before_in_process: called before a run goes in process (stops an idle step server).
    """
    chosen = dg.multi_or_in_process_executor.executor_creation_fn(init_context)  # type: ignore[misc]
    config = init_context.executor_config.get("multiprocess")
    if not isinstance(config, Mapping) or not _is_default(config, default_config["multiprocess"]):
        return chosen
    in_process_config = {
        "retries": config["retries"],
        "step_dependency_config": config.get("step_dependency_config"),
    }
    in_process = dg.in_process_executor.executor_creation_fn(  # type: ignore[misc]
        init_context._replace(executor_config=in_process_config)
    )
    return SequentialRunsInProcess(chosen, in_process, before_in_process)


def _is_default(config: Mapping[str, Any], default: Mapping[str, Any]) -> bool:
    # Dagster fills in the fields nobody gave (retries, ...): compare what a user would set.
    chosen = ("start_method", "max_concurrent", "tag_concurrency_limits")
    return all(config.get(name) == default.get(name) for name in chosen)
