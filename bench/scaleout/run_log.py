"""Where a run's time went, from its own Dagster event log: phases, step launches and work, the
seconds shards ran in, and what Amdahl's law allows."""

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from bench.scaleout.sampling import MACHINE_ROLE, OTHER_ROLE, STEP_PREFIX, PhaseSampler


@dataclass
class StepTimes:
    """Wall-clock times of one step, from the run's event log."""

    key: str
    worker_starting: float | None = None  # STEP_WORKER_STARTING (multiprocess executor)
    engine_event: float | None = None  # its first engine event (Celery: the task's submission)
    worker_up: float | None = None  # STEP_WORKER_STARTED (the step process runs)
    start: float | None = None  # STEP_START (resources initialised)
    first_asset_event: float | None = None  # its first materialisation or observation
    end: float | None = None  # STEP_SUCCESS or STEP_FAILURE
    pid: int | None = None
    asset_events: int = 0

    @property
    def launched(self) -> float | None:
        """When the orchestrator launched the step (its process, or its Celery task)."""
        return self.worker_starting or self.engine_event or self.start

    @property
    def name(self) -> str:
        """The step key without the asset's prefix: `scrape_shard[shard_0]`."""
        return self.key.split(".", 1)[-1]

    @property
    def is_shard(self) -> bool:
        return "_shard[" in self.key

    @property
    def rank(self) -> int:
        return 0 if self.name.endswith("_plan") else 2 if self.name.endswith("_collect") else 1


@dataclass
class RunLog:
    """What the run's own event log says about its timing."""

    created: float  # the run record's creation
    run_start: float | None
    run_end: float | None  # RUN_SUCCESS or RUN_FAILURE
    steps: list[StepTimes]

    @property
    def work_steps(self) -> list[StepTimes]:
        """The steps sharding splits: the shards (the unsharded asset: its one step)."""
        return [s for s in self.steps if s.is_shard] or self.steps


STEP_EVENTS = {
    dg.DagsterEventType.RUN_START,
    dg.DagsterEventType.RUN_SUCCESS,
    dg.DagsterEventType.RUN_FAILURE,
    dg.DagsterEventType.STEP_WORKER_STARTING,
    dg.DagsterEventType.STEP_WORKER_STARTED,
    dg.DagsterEventType.STEP_START,
    dg.DagsterEventType.STEP_SUCCESS,
    dg.DagsterEventType.STEP_FAILURE,
    dg.DagsterEventType.ENGINE_EVENT,
}
ASSET_EVENTS = {dg.DagsterEventType.ASSET_MATERIALIZATION, dg.DagsterEventType.ASSET_OBSERVATION}


def read_run_log(home: Path) -> RunLog | None:
    """The timing of the latest run of the Dagster home `home` (None without a run)."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        records = instance.get_run_records(limit=1)
        if not records:
            return None
        run_id = records[0].dagster_run.run_id
        log = RunLog(records[0].create_timestamp.timestamp(), None, None, [])
        steps: dict[str, StepTimes] = {}
        for entry in instance.all_logs(run_id, of_type=STEP_EVENTS):
            event = entry.dagster_event
            if event is None:
                continue
            kind, when = event.event_type, entry.timestamp
            if kind == dg.DagsterEventType.RUN_START:
                log.run_start = when
            elif kind in (dg.DagsterEventType.RUN_SUCCESS, dg.DagsterEventType.RUN_FAILURE):
                log.run_end = when
            if not entry.step_key:
                continue
            step = steps.setdefault(entry.step_key, StepTimes(entry.step_key))
            if kind == dg.DagsterEventType.STEP_WORKER_STARTING:
                step.worker_starting = when
            elif kind == dg.DagsterEventType.ENGINE_EVENT and step.engine_event is None:
                step.engine_event = when
            elif kind == dg.DagsterEventType.STEP_WORKER_STARTED:
                step.worker_up = when
                pid = getattr(event.event_specific_data, "metadata", {}).get("pid")
                if pid is not None and str(pid.value).isdigit():
                    step.pid = int(pid.value)
            elif kind == dg.DagsterEventType.STEP_START:
                step.start = when
            elif kind in (dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE):
                step.end = when
        for entry in instance.all_logs(run_id, of_type=ASSET_EVENTS):
            owner = steps.get(entry.step_key or "")
            if owner is not None:
                owner.asset_events += 1
                if owner.first_asset_event is None or entry.timestamp < owner.first_asset_event:
                    owner.first_asset_event = entry.timestamp
    log.steps = sorted(steps.values(), key=lambda s: (s.launched or 0.0, s.key))
    return log


def span(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def union_seconds(intervals: Sequence[tuple[float, float]]) -> float:
    """Seconds covered by at least one of `intervals`."""
    total, reach = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b > reach:
            total += b - max(a, reach)
            reach = b
    return total


PhaseKey = tuple[int, int, str, int]


@dataclass
class Breakdown:
    """Where the time of one measured run went."""

    cli_start: float
    cli_end: float
    log: RunLog | None
    sampler: PhaseSampler

    @property
    def seconds(self) -> float:
        return self.cli_end - self.cli_start

    def _work_times(self) -> list[tuple[float, float]]:
        """(STEP_START, end) of each shard step (unsharded: of the asset's step)."""
        steps = self.log.work_steps if self.log else []
        return [(s.start, s.end) for s in steps if s.start is not None and s.end is not None]

    @property
    def work_window(self) -> tuple[float, float] | None:
        """From the first shard step's STEP_START to the last one's end."""
        times = self._work_times()
        return (min(a for a, _ in times), max(b for _, b in times)) if times else None

    @property
    def parallel_seconds(self) -> float | None:
        """Seconds in which shard steps ran (union of their STEP_START..end): what shards split."""
        times = self._work_times()
        return union_seconds(times) if times else None

    def phases(self) -> dict[PhaseKey, tuple[str, float | int | None]]:
        """The run's phases in seconds, by a key that orders them across runs. Steps that run
        at the same time overlap: only the summary lines add up to the total."""
        out: dict[PhaseKey, tuple[str, float | int | None]] = {}
        log = self.log
        created = log.created if log else None
        out[(0, 0, "", 0)] = ("CLI start -> run created", span(self.cli_start, created))
        if log is None:
            return out
        out[(0, 1, "", 0)] = (
            "run created -> RUN_START (planned events)",
            span(log.created, log.run_start),
        )
        launches = [s.launched for s in log.steps if s.launched]
        ends = [s.end for s in log.steps if s.end]
        first, last = (min(launches), max(ends)) if launches and ends else (None, None)
        out[(0, 2, "", 0)] = ("RUN_START -> first step launched", span(log.run_start, first))
        for s in log.steps:
            n = s.name
            if s.worker_up is None:  # Celery: submitted, then picked up and set up by a worker
                out[(1, s.rank, n, 2)] = (f"{n}: launched -> STEP_START", span(s.launched, s.start))
            else:
                up, ready = span(s.launched, s.worker_up), span(s.worker_up, s.start)
                out[(1, s.rank, n, 0)] = (f"{n}: launched -> process up", up)
                out[(1, s.rank, n, 1)] = (f"{n}: process up -> STEP_START", ready)
            out[(1, s.rank, n, 3)] = (f"{n}: STEP_START -> step end", span(s.start, s.end))
            if s.asset_events:
                before = span(s.start, s.first_asset_event)
                out[(1, s.rank, n, 4)] = (f"{n}:   until its 1st asset event", before)
                after = span(s.first_asset_event, s.end)
                out[(1, s.rank, n, 5)] = (f"{n}:   1st asset event -> step end", after)
                out[(1, s.rank, n, 6)] = (f"{n}:   asset events (count)", s.asset_events)
        if first is not None and last is not None:
            steps = [(s.launched or 0.0, s.end or 0.0) for s in log.steps if s.launched and s.end]
            gaps = (last - first) - union_seconds(steps)
            out[(2, 0, "", 0)] = ("between steps: none launched or running", gaps)
        out[(2, 1, "", 0)] = ("last step end -> RUN_SUCCESS", span(last, log.run_end))
        out[(2, 2, "", 0)] = ("RUN_SUCCESS -> CLI exit", span(log.run_end, self.cli_end))
        parallel = self.parallel_seconds
        out[(3, 0, "", 0)] = ("= total (CLI wall seconds)", self.seconds)
        out[(3, 1, "", 0)] = ("P: shard steps running (union)", parallel)
        rest = None if parallel is None else self.seconds - parallel
        out[(3, 2, "", 0)] = ("S: everything else (total - P)", rest)
        share = None if parallel is None else 100 * parallel / self.seconds
        out[(3, 3, "", 0)] = ("P share of the run (%)", share)
        return out

    def window(self, which: str) -> tuple[float, float] | None:
        """`whole` run (the samples before and after the command), `before`, `during` or
        `after` its shard steps."""
        busy = self.sampler.busy
        whole = (busy[0][0], busy[-1][0]) if busy else (self.cli_start, self.cli_end)
        work = self.work_window
        if which == "whole":
            return whole
        if work is None:
            return None
        return {"before": (whole[0], work[0]), "during": work, "after": (work[1], whole[1])}[which]

    def our_cpu(self, which: str) -> float:
        """CPU seconds of our processes (the command's, the helpers', this bench's) in a
        window (see `window`); 0 without it."""
        window = self.window(which)
        if window is None:
            return 0.0
        skip = (OTHER_ROLE, MACHINE_ROLE)
        # Each step's own CPU is in the forked processes' total already.
        cpu = self.cpu(window).items()
        return sum(v for k, v in cpu if k not in skip and not k.startswith(STEP_PREFIX))

    def step_names(self) -> dict[int, str]:
        """Each forked step process's pid: its role, named after its step."""
        steps = self.log.steps if self.log else []
        return {s.pid: f"{STEP_PREFIX}{s.name}" for s in steps if s.pid is not None}

    def cpu(self, window: tuple[float, float] | None = None) -> dict[str, float]:
        """CPU seconds per role over the whole run (from the sample before the command to the
        one after it) or over `window`, with each forked step process's own."""
        start, end = window or self.window("whole") or (self.cli_start, self.cli_end)
        roles = self.sampler.cpu_by_role(start, end)
        named = self.sampler.cpu_by_role(start, end, self.step_names())
        roles.update({k: v for k, v in named.items() if k.startswith(STEP_PREFIX)})
        return roles
