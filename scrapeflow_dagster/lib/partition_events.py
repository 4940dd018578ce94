"""How a step of executor assets stores its per-partition materialisations: the very event
stock Dagster stores for `context.log_event(AssetMaterialization(...))`, without the trip
through the run's loggers, and kept out of the step's event stream unless the caller captures
the run's results in this process.

`context.log_event` costs, per partition, a pass through Python logging and Dagster's log
manager (a record, its metadata, the console line) and, in a step process of the multiprocess
or Celery executor, the event pickled to the run process, unpickled and validated again there,
where nothing reads it (the event log is the record). On 10,000 tasks in two shards that was
2.2 s of an 11.6 s run (2026-11-26). Here each materialisation is built as
`DagsterEvent.asset_materialization` builds it and handed to the instance as the log manager's
event-log handler hands it (`instance.handle_new_event`), so the stored row is the same (a
contract test compares them field by field). It is appended to the step's events only when the
run's outputs are captured in this process (`execute_in_process`, `dg.materialize`), so their
results list every materialisation as before. What the run's loggers, `python_logs` handlers
and hooks see of a step no longer includes these events, nor does the result of
`dg.execute_job` (whatever its executor): the event log holds them, as it holds every run's.

This leans on Dagster internals (the event's constructor, the step context): on a Dagster
version the guard does not admit, `context.log_event` is used.
"""

import logging
import os
import time
from collections.abc import Callable

import dagster as dg

from scrapeflow_dagster.storage.dagster_internals.version_guard import supports_dagster_version

LogMaterialization = Callable[[dg.AssetMaterialization], None]


def materialization_logger(
    context: dg.OpExecutionContext | dg.AssetExecutionContext,
) -> LogMaterialization:
    """The function this step logs each partition's materialisation with (see the module)."""
    if not supports_dagster_version(fallback="materialisations logged through the run's loggers"):
        return context.log_event
    from dagster._core.events import DagsterEvent, DagsterEventType, StepMaterializationData
    from dagster._core.events.log import EventLogEntry

    step_context = context.get_step_execution_context()
    step = step_context.step
    op_context: dg.OpExecutionContext = (
        context.op_execution_context if isinstance(context, dg.AssetExecutionContext) else context
    )
    capture = step_context.output_capture is not None
    instance = context.instance
    run_id, job_name = context.run.run_id, step_context.job_name
    tags, kind, pid = step_context.event_tags, step.kind.value, os.getpid()
    event_type = DagsterEventType.ASSET_MATERIALIZATION.value

    def log(materialization: dg.AssetMaterialization) -> None:
        label = f" {materialization.label}" if materialization.label else ""
        message = materialization.description or f"Materialized value{label}."
        event = DagsterEvent(
            event_type_value=event_type,
            job_name=job_name,
            step_handle=step.handle,
            node_handle=step.node_handle,
            step_kind_value=kind,
            logging_tags=tags,
            event_specific_data=StepMaterializationData(materialization),
            message=message,
            pid=pid,
        )
        instance.handle_new_event(
            EventLogEntry(
                error_info=None,
                level=logging.DEBUG,
                user_message=message,
                run_id=run_id,
                timestamp=time.time(),
                step_key=step.key,
                job_name=job_name,
                dagster_event=event,
            )
        )
        if capture:  # the step's current list: `consume_events` swaps in a new one
            op_context._events.append(event)

    return log
