"""Where the time of a Dagster run went, read back from its event log after the run.

Per-partition ASSET_MATERIALIZATION_PLANNED events are written by the CLI when it creates the
run, then comes the asset's own compute, then per-partition ASSET_MATERIALIZATION events written
by the step worker: each phase is timed from the events' timestamps.
"""

from pathlib import Path
from typing import Any


def open_instance(home: Path):  # type: ignore[no-untyped-def]
    """The Dagster instance whose home is `home` (a context manager)."""
    import dagster as dg
    from dagster._core.instance.ref import InstanceRef

    return dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))


def run_analysis(home: Path, asset: str, started_wall: float | None = None) -> dict[str, Any]:
    """Where the time of the (latest) run in `home` went, from its event log; plus how many
    partitions of `asset` are materialised."""
    import dagster as dg
    from dagster._core.events import DagsterEventType as T

    with open_instance(home) as instance:
        records = instance.get_run_records(limit=1)
        materialized = len(instance.get_materialized_partitions(dg.AssetKey(asset)))
        if not records:
            return {"materialized": materialized}
        record = records[0]
        run_id = record.dagster_run.run_id
        entries = instance.all_logs(run_id)
    times: dict[str, list[float]] = {}
    user_logs: list[tuple[float, str]] = []
    for entry in entries:
        if entry.dagster_event is None:
            user_logs.append((entry.timestamp, entry.user_message))
            continue
        times.setdefault(entry.dagster_event.event_type_value, []).append(entry.timestamp)

    def first(kind: T) -> float | None:
        found = times.get(kind.value)
        return min(found) if found else None

    def last(kind: T) -> float | None:
        found = times.get(kind.value)
        return max(found) if found else None

    created = record.create_timestamp.timestamp()
    planned = times.get(T.ASSET_MATERIALIZATION_PLANNED.value, [])
    mats = times.get(T.ASSET_MATERIALIZATION.value, [])
    run_start, run_end = first(T.RUN_START), last(T.RUN_SUCCESS) or last(T.RUN_FAILURE)
    step_start = first(T.STEP_START)
    step_end = last(T.STEP_SUCCESS) or last(T.STEP_FAILURE)
    # ours logs "scrape: N tasks" once the engine has finished every task
    engine_done = next((t for t, msg in user_logs if msg.startswith(f"{asset}: ")), None)

    def span(a: float | None, b: float | None) -> float | None:
        return (b - a) if a is not None and b is not None else None

    phases = {
        "cli_start_to_run_created": span(started_wall, created),
        "planned_events": span(min(planned), max(planned)) if planned else None,
        "run_created_to_run_start": span(created, run_start),
        "run_start_to_step_start": span(run_start, step_start),
        "step_compute": span(step_start, engine_done or (min(mats) if mats else None)),
        "materialization_events": span(engine_done or (min(mats) if mats else None), step_end),
        "step_end_to_run_end": span(step_end, run_end),
    }
    return {
        "run_id": run_id,
        "materialized": materialized,
        "events": len(entries),
        "planned_events": len(planned),
        "materialization_events": len(mats),
        "phases": phases,
        "run_seconds": span(run_start, run_end),
        "run_end_wall": run_end,
    }
