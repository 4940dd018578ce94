"""A factory that turns an engine executor into a partitioned Dagster asset.

One run handles all its partitions concurrently through the engine. Succeeded (and already
succeeded, skipped) tasks are materialised with small metadata (url, attempts, http_status,
size, md5) in every run; if any task failed the step
fails after logging those materialisations, so exactly the failed partitions end FAILED in
the UI and a "failed and missing" backfill re-runs just them. Tasks the run could not attempt
(their upstream step has not succeeded) stay missing, also in a run that fails
(`release_not_attempted`).
"""

import asyncio
import inspect
import logging
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import dagster as dg

from scrapeflow_dagster.defs.partitions import tasks_partitions_def
from scrapeflow_dagster.defs.resources import (
    ProxyProviderResource,
    ScrapeSettingsResource,
    StatusStoreResource,
)
from scrapeflow_dagster.engine.executor import Executor, executor_name
from scrapeflow_dagster.engine.redact import redact
from scrapeflow_dagster.engine.run.results import StepResult
from scrapeflow_dagster.engine.run.step import StepReport, Succeeded, run_step
from scrapeflow_dagster.storage.version_guard import supports_dagster_version

CHECK_NAME = "no_failed_tasks"
MESSAGE_CHARS = 500
GROUP_NAME = "scraping"


class StepConfig(dg.Config):
    """Run-time choices of an executor asset."""

    force: bool = False  # re-run tasks whose step already succeeded
    refresh_older_than_seconds: float | None = None  # re-run successes older than this


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


def add_partition_metadata(
    context: dg.AssetExecutionContext, metadata_by_key: Mapping[str, Mapping[str, Any]]
) -> bool:
    """Give each partition Dagster materialises for this step its own metadata, in one step.

    `context.add_asset_metadata(partition_key=...)` reloads the run's partition keys and copies
    the whole metadata map on every call (quadratic: minutes at 10,000 partitions), so the
    step's metadata accumulator, a Dagster internal, is set once. Only on the Dagster version
    this was written against (`test_assets` checks the metadata lands); on another one it
    warns once and the partitions go without (details stay in DuckDB and the status files).

    Returns:
        Whether the metadata was set.
    """
    if not supports_dagster_version(fallback="partitions go without per-partition metadata"):
        return False
    from dagster._core.execution.context.metadata_logging import (
        AssetMetadataHandle,
        OutputMetadataAccumulator,
    )

    step = context.op_execution_context._step_execution_context
    merged = dict(step._metadata_accumulator.per_output_metadata)
    for key, metadata in metadata_by_key.items():
        handle = AssetMetadataHandle(asset_key=context.asset_key, partition_key=key)
        merged[handle] = {**merged.get(handle, {}), **metadata}
    step._metadata_accumulator = OutputMetadataAccumulator(per_output_metadata=merged)
    return True


def release_not_attempted(
    context: dg.AssetExecutionContext,
    keys: Sequence[str],
    *,
    failed_key: str,
    asset_key: dg.AssetKey | None = None,
) -> bool:
    """Keep the partitions of `keys`, which this failing run planned but could not attempt
    (upstream missing), out of Dagster's FAILED partitions: they stay missing.

    Dagster (1.13.27, `partition_status_cache`) calls a partition FAILED when its latest
    planned or materialisation event is a planned one from a run that ended FAILURE, and a
    ranged run plans every partition of its range. So each of `keys` gets a newer planned
    event without a run (Dagster's runless run id, as for events reported outside runs): a
    planned event whose run does not exist counts as neither failed nor in progress. It must
    be written before the run ends (the status cache never takes a partition back out of
    FAILED but by a materialisation), hence here, in the step. Then `failed_key` is planned
    again in this run, so the asset's latest planned run (the UI's "latest run") is still
    this one; it stays FAILED. Only on the Dagster version this was checked against
    (`test_assets` fails loudly otherwise); elsewhere it warns once and the keys end FAILED.

    Args:
        context: the context of the step that is about to fail the run.
        keys: partitions of the run that were not attempted (their upstream is missing).
        failed_key: a partition of the run that failed.
        asset_key: the asset, when the step's context has none of its own (a graph's op).

    Returns:
        Whether the events were written.
    """
    if not keys or not supports_dagster_version(
        fallback="tasks not attempted (upstream missing) in a run with failures end FAILED"
    ):
        return False
    from dagster._core.events import (
        AssetMaterializationPlannedData,
        DagsterEvent,
        DagsterEventType,
    )
    from dagster._core.events.log import EventLogEntry
    from dagster._core.instance import RUNLESS_JOB_NAME, RUNLESS_RUN_ID

    asset_key = asset_key or context.asset_key
    name = asset_key.to_user_string()
    run = context.run
    step_key = context.get_step_execution_context().step.key
    stamp = time.time()

    def planned(
        key: str, run_id: str, job_name: str, step: str | None, message: str
    ) -> "EventLogEntry":
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

    entries = [
        planned(
            key,
            RUNLESS_RUN_ID,
            RUNLESS_JOB_NAME,
            None,
            f"{name} {key}: not attempted by run {run.run_id}, its upstream step is missing",
        )
        for key in keys
    ]
    message = f"{name} {failed_key}: failed, the latest planned partition of run {run.run_id}"
    entries.append(planned(failed_key, run.run_id, run.job_name, step_key, message))
    context.instance.event_log_storage.store_event_batch(entries)
    return True


def check_result(report: StepReport) -> dg.AssetCheckResult:
    """The `no_failed_tasks` check over a run's report: counts by outcome, error kind and class."""
    counts = report.counts_by_outcome()
    return dg.AssetCheckResult(
        check_name=CHECK_NAME,
        passed=not report.failed,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "summary": dg.MetadataValue.md(report.markdown()),
            "succeeded": counts.get("SUCCESS", 0),
            "skipped": counts.get("SKIPPED", 0),
            "failed": counts.get("ERROR", 0),
            "not_ready": len(report.not_ready),
        },
    )


def run_executor_step(
    executor: Executor,
    keys: Sequence[str],
    *,
    requires: Sequence[str],
    force: bool,
    max_age_seconds: float | None,
    run_id: str,
    scrape_settings: ScrapeSettingsResource,
    status_store: StatusStoreResource,
    proxy_provider: ProxyProviderResource,
) -> StepReport:
    """Run `executor` over the tasks `keys` with the resources' settings (the engine's
    `run_step`, one asyncio loop): what an executor asset's step, or one shard of it, does."""
    return asyncio.run(
        run_step(
            status_store.layout(),
            executor,
            keys,
            settings=scrape_settings.build(),
            proxy_provider=proxy_provider.build(),
            requires=requires,
            force=force,
            max_age_seconds=max_age_seconds,
            timeout_seconds=scrape_settings.executor_timeout_seconds,
            max_parallelism=scrape_settings.max_parallelism,
            run_id=run_id,
        )
    )


def publish(
    context: dg.AssetExecutionContext, report: StepReport
) -> Iterator[dg.AssetCheckResult | dg.MaterializeResult]:
    """Turn a step report into Dagster events; raises `dg.Failure` when any task failed."""
    context.log.info(f"{report.executor}: {report.tasks} tasks\n{report.markdown()}")
    failed = report.failed
    if not failed and not report.not_ready:
        # Everything succeeded: Dagster materialises every partition of the run itself (and
        # downstream assets selected in the same run go on), each with its own metadata.
        add_partition_metadata(
            context, {key: partition_metadata(done) for key, done in report.succeeded.items()}
        )
        yield dg.MaterializeResult(check_results=[check_result(report)])
        return
    for key, done in report.succeeded.items():
        context.log_event(
            dg.AssetMaterialization(
                asset_key=context.asset_key, partition=key, metadata=partition_metadata(done)
            )
        )
    # Each failed partition gets an event of its own, so its page in the UI says why it failed
    # (the run's failure only names a few keys). Failures are few: one event each is cheap.
    for key, result in report.errors.items():
        context.log_event(
            dg.AssetObservation(
                asset_key=context.asset_key,
                partition=key,
                description=f"{result.error_class}: {result.message}"[:MESSAGE_CHARS],
                metadata=failure_metadata(result),
            )
        )
    yield check_result(report)
    if not failed:
        # Only tasks whose upstream is missing: they stay missing (not failed) and no output
        # is yielded, so nothing downstream runs on them in this run.
        return
    release_not_attempted(context, report.not_ready, failed_key=failed[-1])
    sample = ", ".join(failed[:5])
    raise dg.Failure(
        description=f"{len(failed)} of {report.tasks} tasks failed (e.g. {sample})",
        metadata={"summary": dg.MetadataValue.md(report.markdown()), "failed": len(failed)},
        allow_retries=False,
    )


def executor_asset(
    executor: Executor,
    *,
    name: str | None = None,
    requires: Sequence[str] = (),
    description: str | None = None,
) -> dg.AssetsDefinition:
    """A partitioned asset (over `tasks`) that runs `executor` for every partition of a run.

    Args:
        executor: an engine executor (`taskify`-decorated function); its name is the asset's.
        name: asset name when it should differ from the executor's (status files use it too).
        requires: upstream executor assets that must have succeeded for a task first.
        description: shown in the UI; defaults to the executor's docstring.
    """
    asset_name = name or executor_name(executor)

    def _asset(
        context: dg.AssetExecutionContext,
        config: StepConfig,
        scrape_settings: ScrapeSettingsResource,
        status_store: StatusStoreResource,
        proxy_provider: ProxyProviderResource,
    ) -> Iterator[dg.AssetCheckResult | dg.MaterializeResult]:
        report = run_executor_step(
            executor,
            context.partition_keys,
            requires=requires,
            force=config.force,
            max_age_seconds=config.refresh_older_than_seconds,
            run_id=context.run.run_id,
            scrape_settings=scrape_settings,
            status_store=status_store,
            proxy_provider=proxy_provider,
        )
        yield from publish(context, report)

    # `backfill_policy` is beta in the pinned Dagster: the notice says nothing to our users.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        return dg.asset(
            name=asset_name,
            partitions_def=tasks_partitions_def,
            deps=list(requires),
            backfill_policy=dg.BackfillPolicy.single_run(),
            check_specs=[dg.AssetCheckSpec(CHECK_NAME, asset=asset_name)],
            description=description or inspect.getdoc(executor),
            group_name=GROUP_NAME,
            kinds={"python"},
            output_required=False,
        )(_asset)
