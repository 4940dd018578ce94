"""Dagster events of a run of executor assets: one materialisation per succeeded (asset,
partition), one observation per failed one, the `no_failed_tasks` check per asset, and the run's
failure when any task failed.

The step logs each partition's event itself and never yields an asset output: an output would
materialise every partition of the run again (two events per partition), failed ones included.
When the run fails, Dagster marks FAILED every partition the run planned that nothing
materialised since; tasks a run could not take that far (an upstream step failed or had not
succeeded) are given back to "missing" (`release_not_attempted`), so exactly the failed (asset,
partition) pairs end FAILED and a "failed and missing" backfill re-runs them and what waits
below them.
"""

import logging
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import dagster as dg

from scrapeflow_dagster.engine.redact import redact
from scrapeflow_dagster.engine.run.results import StepResult
from scrapeflow_dagster.engine.run.step import Outcome, StepReport, Succeeded
from scrapeflow_dagster.lib.partition_events import LogMaterialization
from scrapeflow_dagster.storage.batches.buffer import BufferedEventLog
from scrapeflow_dagster.storage.dagster_internals.version_guard import (
    supports_dagster_version,
    unverified_versions,
)

if TYPE_CHECKING:
    from dagster._core.events.log import EventLogEntry

CHECK_NAME = "no_failed_tasks"
MESSAGE_CHARS = 500


def partition_metadata(done: Succeeded) -> dict[str, int | str | bool]:
    """The few values each partition carries (every event costs Dagster time: keep it small)."""
    meta: dict[str, int | str | bool] = {"attempts": done.attempts}
    if done.url:
        meta["url"] = redact(done.url)
    if done.http_status is not None:
        meta["http_status"] = done.http_status
    if done.size is not None:
        meta["size"] = done.size
    if done.md5:
        meta["md5"] = done.md5
    if done.skipped:
        meta["skipped"] = True
    return meta


def failure_metadata(result: StepResult) -> dict[str, int | str]:
    """Why one task failed, for the observation its partition gets (messages are redacted)."""
    meta: dict[str, int | str] = {
        "error_kind": result.error_kind or "",
        "error_class": result.error_class or "",
        "message": (result.message or "")[:MESSAGE_CHARS],
        "attempts": result.attempts,
    }
    if result.url:
        meta["url"] = redact(result.url)
    if result.http_status is not None:
        meta["http_status"] = result.http_status
    return meta


def log_outcome(
    context: dg.OpExecutionContext | dg.AssetExecutionContext,
    asset_name: str,
    key: str,
    outcome: Outcome,
    *,
    materialize: LogMaterialization | None = None,
) -> None:
    """A materialisation of a succeeded partition, or an observation of a failed one.

    Logged by the step (or shard) that ran the task as soon as it ended, so a run killed half
    way keeps what it finished (as far as the event storage had written it). Each failed
    partition gets an event of its own, so its page in the UI says why it failed (the run's
    failure only names a few keys). `materialize` logs the materialisation (default
    `context.log_event`; a step passes its `partition_events.materialization_logger`).
    """
    asset_key = dg.AssetKey(asset_name)
    if isinstance(outcome, Succeeded):
        (materialize or context.log_event)(
            dg.AssetMaterialization(
                asset_key=asset_key, partition=key, metadata=partition_metadata(outcome)
            )
        )
        return
    context.log_event(
        dg.AssetObservation(
            asset_key=asset_key,
            partition=key,
            description=f"{outcome.error_class}: {outcome.message}"[:MESSAGE_CHARS],
            metadata=failure_metadata(outcome),
        )
    )


def check_result(report: StepReport, asset_key: dg.AssetKey) -> dg.AssetCheckResult:
    """The `no_failed_tasks` check over a run's report: counts by outcome, error kind and class."""
    counts = report.counts_by_outcome()
    metadata: dict[str, Any] = {
        "summary": dg.MetadataValue.md(report.markdown()),
        "succeeded": counts.get("SUCCESS", 0),
        "skipped": counts.get("SKIPPED", 0),
        "failed": counts.get("ERROR", 0),
        "not_ready": len(report.not_ready),
    }
    # A Dagster the storages are not verified on runs them stock (a home ~15x larger per task):
    # said in the check users look at, failing, not only once in a process's log.
    unverified = unverified_versions()
    if unverified is not None:
        metadata["dagster_unverified"] = unverified
    return dg.AssetCheckResult(
        asset_key=asset_key,
        check_name=CHECK_NAME,
        passed=not report.failed and unverified is None,
        severity=dg.AssetCheckSeverity.WARN,
        metadata=metadata,
        description=unverified,
    )


def merge_reports(names: Sequence[str], parts: Sequence[Mapping[str, StepReport]]) -> dict:
    """One report per asset name for the whole run from the reports of its shards (disjoint
    keys)."""
    merged = {name: StepReport(executor=name) for name in names}
    for part in parts:
        for name, report in part.items():
            merged[name].merge(report)
    return merged


def run_keys(partition_keys: Sequence[str], reports: Mapping[str, StepReport]) -> list[str]:
    """The run's partitions and those its step added as it went (a crawl streamed through one
    run): every key a report names."""
    keys = list(partition_keys)
    known = set(keys)
    for report in reports.values():
        for key in [*report.succeeded, *report.errors, *report.not_ready]:
            if key not in known:
                known.add(key)
                keys.append(key)
    return keys


def finish_run(
    context: dg.OpExecutionContext | dg.AssetExecutionContext,
    reports: Mapping[str, StepReport],
    run_keys: Sequence[str],
    *,
    checks: Collection[dg.AssetCheckKey] | None,
) -> Iterator[dg.AssetCheckResult]:
    """The check of each asset in `reports` (those in `checks`; None: all), then the run's
    failure when any task failed, with every partition of `run_keys` that an asset did not
    reach given back to "missing" first.

    Raises:
        dg.Failure: when any task failed (not retried by Dagster: the retry sensor decides).
    """
    for name, report in reports.items():
        key = dg.AssetKey(name)
        if checks is None or dg.AssetCheckKey(key, CHECK_NAME) in checks:
            yield check_result(report, key)
    failed = {name: report.failed for name, report in reports.items() if report.failed}
    if not failed:
        # Tasks whose upstream is missing stay missing (not failed): the run succeeds.
        return
    for name, report in reports.items():
        reached = report.succeeded.keys() | report.errors.keys()
        release_not_attempted(
            context,
            [key for key in run_keys if key not in reached],
            failed_key=max(report.errors) if report.errors else None,
            asset_key=dg.AssetKey(name),
        )
    parts = []
    for name, keys in failed.items():
        sample = ", ".join(sorted(keys)[:5])
        parts.append(f"{name}: {len(keys)} of {len(run_keys)} tasks failed (e.g. {sample})")
    raise dg.Failure(
        description="; ".join(parts),
        metadata={
            "summary": dg.MetadataValue.md(
                "\n\n".join(f"**{name}**\n\n{r.markdown()}" for name, r in reports.items())
            ),
            "failed": sum(len(keys) for keys in failed.values()),
        },
        allow_retries=False,
    )


def release_not_attempted(
    context: dg.OpExecutionContext | dg.AssetExecutionContext,
    keys: Sequence[str],
    *,
    failed_key: str | None,
    asset_key: dg.AssetKey,
) -> bool:
    """Keep the partitions of `keys`, which this failing run planned for `asset_key` but did
    not reach (an upstream step failed or is missing), out of Dagster's FAILED partitions:
    they stay missing.

    Dagster (1.13.27, `partition_status_cache`) calls a partition FAILED when its latest
    planned or materialisation event is a planned one from a run that ended FAILURE, and a
    ranged run plans every partition of its range for every selected asset. So each of `keys`
    gets a newer planned event without a run (Dagster's runless run id, as for events reported
    outside runs): a planned event whose run does not exist counts as neither failed nor in
    progress. It must be written before the run ends (the status cache never takes a partition
    back out of FAILED but by a materialisation), hence here, in the step. Then `failed_key`
    (when the asset has a failed partition) is planned again in this run, so the asset's
    latest planned run (the UI's "latest run") is still this one; it stays FAILED. Only on the
    Dagster versions this was checked against (`test_assets` fails loudly otherwise);
    elsewhere it warns once and the keys end FAILED.

    Args:
        context: the context of the step that is about to fail the run.
        keys: partitions of the run that the asset did not reach.
        failed_key: a partition of the run that failed for this asset, if any.
        asset_key: the asset.

    Returns:
        Whether the events were written.
    """
    if not keys or not supports_dagster_version(
        fallback="tasks not attempted (upstream missing) in a run with failures end FAILED"
    ):
        return False
    from dagster._core.instance import RUNLESS_JOB_NAME, RUNLESS_RUN_ID

    name = asset_key.to_user_string()
    run = context.run
    step_key = context.get_step_execution_context().step.key
    stamp = time.time()
    entries = [
        _planned(
            asset_key,
            key,
            RUNLESS_RUN_ID,
            RUNLESS_JOB_NAME,
            None,
            # The same message for every key: the events share one template.
            f"{name}: not attempted by run {run.run_id}, its upstream step did not succeed",
            stamp,
        )
        for key in keys
    ]
    if failed_key is not None:
        message = f"{name} {failed_key}: failed, the latest planned partition of run {run.run_id}"
        entries.append(
            _planned(asset_key, failed_key, run.run_id, run.job_name, step_key, message, stamp)
        )
    context.instance.event_log_storage.store_event_batch(entries)
    return True


def plan_in_run(
    context: dg.OpExecutionContext | dg.AssetExecutionContext,
    asset_names: Sequence[str],
    keys: Sequence[str],
) -> bool:
    """Plan the partitions `keys`, which this step adds to its run as it goes (a crawl streamed
    through one run), for each of `asset_names`, as Dagster plans a ranged run's partitions
    when it creates the run: they show in progress while it runs, and FAILED if it fails
    without materialising them (`finish_run` gives back to "missing" those an asset did not
    reach, as for the run's own partitions). Only on the Dagster versions the guard admits.

    Returns:
        Whether the events were written (False: the step must not add partitions to its run).
    """
    if not supports_dagster_version(fallback="a crawl's run does not take in its own links"):
        return False
    run = context.run
    step_key = context.get_step_execution_context().step.key
    stamp = time.time()
    entries = [
        _planned(
            dg.AssetKey(name),
            key,
            run.run_id,
            run.job_name,
            step_key,
            # The same message for every key: the events share one template.
            f"{name}: discovered by run {run.run_id}, planned in it",
            stamp,
        )
        for name in asset_names
        for key in keys
    ]
    storage = context.instance.event_log_storage
    if isinstance(storage, BufferedEventLog):
        # Into the buffer, written with the run's materialisations: a batch write here (the
        # discovery's thread) would hold the buffer while the step's loop waits to log.
        for entry in entries:
            storage.store_event(entry)
    else:
        storage.store_event_batch(entries)
    return True


def _planned(
    asset_key: dg.AssetKey,
    key: str,
    run_id: str,
    job_name: str,
    step: str | None,
    message: str,
    stamp: float,
) -> "EventLogEntry":
    """A planned materialisation of `asset_key`'s partition `key`, as Dagster writes one."""
    from dagster._core.events import (
        AssetMaterializationPlannedData,
        DagsterEvent,
        DagsterEventType,
    )
    from dagster._core.events.log import EventLogEntry

    event = DagsterEvent(
        event_type_value=DagsterEventType.ASSET_MATERIALIZATION_PLANNED.value,
        job_name=job_name,
        message=message,
        event_specific_data=AssetMaterializationPlannedData(asset_key, partition=key),
        step_key=step,
    )
    return EventLogEntry(
        user_message=message,
        level=logging.DEBUG,
        job_name=job_name,
        run_id=run_id,
        error_info=None,
        timestamp=stamp,
        step_key=step,
        dagster_event=event,
    )
