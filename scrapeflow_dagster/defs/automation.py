"""What the sensors and the schedules share: the executor chain they act on, tick settings,
and run requests over partition ranges (Dagster runs take ranges)."""

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg

from scrapeflow_dagster.engine.retry.ranges import split_ranges
from scrapeflow_dagster.lib.chain import chain_node_name
from scrapeflow_dagster.lib.partitions import RANGE_END_TAG, RANGE_START_TAG
from scrapeflow_dagster.scaleout.sizing import one_shard_run

# Deployment setting, read when the definitions load: how often the daemon may tick each
# sensor (Dagster needs it at definition time, so it cannot be a resource field).
INTERVAL_ENV = "SCRAPEFLOW_SENSOR_INTERVAL_SECONDS"
MAX_RUNS_PER_TICK = 10
# A run costs seconds to start (process, code location, Dagster events) whatever its size: a
# due set is cut into several runs only where each still gets at least this many tasks.
MIN_PARTITIONS_PER_SPLIT_RUN = 500
IN_PROCESS_EXECUTION: dict[str, Any] = {"execution": {"config": {"in_process": {}}}}


def interval_seconds(default_seconds: int) -> int:
    """`$SCRAPEFLOW_SENSOR_INTERVAL_SECONDS`, or `default_seconds`.

    Raises:
        ValueError: naming the variable when it is set but not a whole number of seconds >= 1.
    """
    value = os.environ.get(INTERVAL_ENV, "").strip()
    if not value:
        return default_seconds
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{INTERVAL_ENV} must be a whole number of seconds >= 1, got {value!r}")
    return int(value)


SENSORS_DEFAULT_ENV = "SCRAPEFLOW_SENSORS_DEFAULT"


def promised_sensor_status() -> dg.DefaultSensorStatus:
    """How the inbox and retry sensors start on a home that never switched them: running (taking
    in tasks and re-materialising failures is what the product promises), unless
    `$SCRAPEFLOW_SENSORS_DEFAULT` is `stopped`. A sensor switched in the UI or with `dagster
    sensor stop` keeps that state in its home.

    Raises:
        ValueError: naming the variable when it is neither `running` nor `stopped`.
    """
    value = os.environ.get(SENSORS_DEFAULT_ENV, "").strip().lower() or "running"
    if value not in ("running", "stopped"):
        raise ValueError(f"{SENSORS_DEFAULT_ENV} must be running or stopped, got {value!r}")
    return dg.DefaultSensorStatus.RUNNING if value == "running" else dg.DefaultSensorStatus.STOPPED


def cron_from_env(name: str, default: str) -> str:
    """The cron schedule in the environment variable `name`, or `default` when it is unset or
    blank.

    Raises:
        ValueError: naming the variable when its value is not a cron Dagster accepts (the code
            location would otherwise fail to load with an error about the schedule only).
    """
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        # Dagster's own check (the one the schedule would fail on), on a throwaway definition.
        dg.ScheduleDefinition(name="cron_check", cron_schedule=value, job_name="cron_check")
    except dg.DagsterInvalidDefinitionError:
        raise ValueError(
            f"{name} must be a cron schedule of 5 fields like {default!r}, got {value!r}"
        ) from None
    return value


@dataclass(frozen=True)
class ExecutorChain:
    """The executor assets in dependency order, with what each one requires.

    `in_process_small_runs`: the code location runs on Dagster's default executor, so a run
    that is one shard may ask for its in-process mode (see `run_config`).
    """

    assets: tuple[dg.AssetsDefinition, ...]
    in_process_small_runs: bool = False

    @classmethod
    def of(
        cls, assets: Sequence[dg.AssetsDefinition], *, in_process_small_runs: bool = False
    ) -> "ExecutorChain":
        """The chain of `assets` (listed upstream first, as `executor_asset` builds them).

        Raises:
            ValueError: when the first asset requires another one (it must fetch).
        """
        chain = cls(tuple(assets), in_process_small_runs)
        if not chain.assets or chain.requires(chain.assets[0]):
            raise ValueError("the first executor asset must need no other (e.g. scrape)")
        return chain

    @property
    def keys(self) -> list[dg.AssetKey]:
        """Every asset key of the chain, upstream first (a sensor's target)."""
        return [asset.key for asset in self.assets]

    @property
    def root(self) -> dg.AssetKey:
        """The asset that fetches (`scrape`): new tasks and re-fetches start there."""
        return self.assets[0].key

    @property
    def node_name(self) -> str:
        """The step that runs the chain: where a run's config goes (`ops: {<name>: ...}`)."""
        return chain_node_name([asset.key.to_user_string() for asset in self.assets])

    def step_config(self, **config: Any) -> dict[str, Any]:
        """The run config that gives the chain step `config` (e.g. `force=True`)."""
        return {"ops": {self.node_name: {"config": config}}}

    @staticmethod
    def requires(asset: dg.AssetsDefinition) -> list[dg.AssetKey]:
        """The executor assets `asset` needs to have succeeded first."""
        return [dep.asset_key for spec in asset.specs for dep in spec.deps]

    def run_config(self, tasks: int, run_config: Mapping[str, Any] | None = None) -> dict:
        """`run_config` for a run over `tasks` tasks, with Dagster's in-process executor when
        the run is one shard (`scaleout.sizing.one_shard_run`) and the chain may: its steps
        follow one another anyway, and the multiprocess executor would start a process per
        step (2-6 s each; a sharded asset has three), more than a small run's work."""
        config = dict(run_config or {})
        if self.in_process_small_runs and one_shard_run(tasks):
            config.update(IN_PROCESS_EXECUTION)
        return config


RUN_KEY_TAG = "dagster/run_key"


def range_run_request(
    asset_key: dg.AssetKey | Sequence[dg.AssetKey],
    first: str,
    last: str,
    *,
    reason: str,
    fingerprint: str = "",
    run_config: Mapping[str, Any] | None = None,
) -> dg.RunRequest:
    """A run of one asset (or several, in dependency order) over partitions `first...last`,
    with a run key against duplicates.

    `fingerprint` changes when the same range should run again (e.g. the failure counts of
    its tasks), so an unchanged plan re-evaluated by a sensor never launches twice.
    """
    keys = [asset_key] if isinstance(asset_key, dg.AssetKey) else list(asset_key)
    names = "+".join(key.to_user_string() for key in keys)
    digest = hashlib.sha1(f"{first}\0{last}\0{fingerprint}".encode()).hexdigest()[:16]
    return dg.RunRequest(
        run_key=f"{reason}:{names}:{digest}",
        asset_selection=keys,
        run_config=dict(run_config or {}),
        tags={RANGE_START_TAG: first, RANGE_END_TAG: last, "scrapeflow/reason": reason},
    )


def range_run_requests(
    chain: ExecutorChain,
    asset_key: dg.AssetKey | Sequence[dg.AssetKey],
    ranges: Sequence[tuple[str, str]],
    ordered: Sequence[str],
    *,
    reason: str,
    fingerprint: str = "",
    run_config: Mapping[str, Any] | None = None,
) -> list[dg.RunRequest]:
    """A `range_run_request` per range of the `ordered` partitions, each run on the executor
    the chain picks for its size (`ExecutorChain.run_config`)."""
    return [
        range_run_request(
            asset_key,
            first,
            last,
            reason=reason,
            fingerprint=fingerprint,
            run_config=chain.run_config(tasks, run_config),
        )
        for (first, last), tasks in zip(ranges, range_sizes(ordered, ranges), strict=True)
    ]


def range_sizes(ordered: Sequence[str], ranges: Sequence[tuple[str, str]]) -> list[int]:
    """How many partitions each `(first, last)` range of the ordered partitions spans."""
    position = {key: index for index, key in enumerate(ordered)}
    return [position[last] - position[first] + 1 for first, last in ranges]


def run_exists(instance: dg.DagsterInstance, run_key: str) -> bool:
    """Whether a run was created for `run_key` (the daemon tags each run with its run key)."""
    return bool(instance.get_run_ids(filters=dg.RunsFilter(tags={RUN_KEY_TAG: run_key}), limit=1))


def max_concurrent_runs(instance: dg.DagsterInstance) -> int | None:
    """How many runs the instance's run queue starts at a time (`run_queue:
    max_concurrent_runs` in dagster.yaml); None when no limit is known (runs launched at once,
    as by an ephemeral instance, or a limit of -1) or the queue is paused (0)."""
    queue = instance.get_concurrency_config().run_queue_config
    if queue is None or queue.max_concurrent_runs < 1:
        return None
    return queue.max_concurrent_runs


def spread_ranges(
    instance: dg.DagsterInstance, ordered: Sequence[str], ranges: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
    """`ranges` cut into as many runs as the instance's run queue starts at a time (at least
    MIN_PARTITIONS_PER_SPLIT_RUN tasks each), so one large due set keeps every run slot busy.

    Runs already queued or running are not counted: the cut would then change from one
    evaluation to the next and so would the run keys, launching the same tasks twice; the
    queue holds the extra runs until a slot frees.
    """
    return split_ranges(
        ordered,
        ranges,
        max_runs=max_concurrent_runs(instance),
        min_partitions_per_run=MIN_PARTITIONS_PER_SPLIT_RUN,
    )
