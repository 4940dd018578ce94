"""One executor over a batch of task keys, recorded in DuckDB: what a Dagster asset run calls."""

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from yarl import URL

from scrapeflow_dagster.engine.history import Ledger, OutputRow, PageRow, StepRow
from scrapeflow_dagster.engine.history.database.retention import prune_once_a_day
from scrapeflow_dagster.engine.history.recording.rows import MAX_OUTPUT_BYTES, OutputColumnsRow
from scrapeflow_dagster.engine.proxies import ProxyProvider
from scrapeflow_dagster.engine.run.context import Executor, declared_output, executor_name
from scrapeflow_dagster.engine.run.execute import execute_async
from scrapeflow_dagster.engine.run.feed import Grow
from scrapeflow_dagster.engine.run.results import StepResult
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.state.atomic import sweep_stale_temp_files
from scrapeflow_dagster.engine.state.layout import DataLayout

UPSTREAM = "upstream"


class Succeeded(NamedTuple):
    """A succeeded (or skipped) task's partition metadata, handed to the outcome callback as
    its step ends (a report keeps only its key)."""

    attempts: int
    http_status: int | None
    size: int | None
    md5: str | None
    skipped: bool
    url: str | None = None


# What a report keeps of one task's step: its success, or the failed step's result.
Outcome = Succeeded | StepResult
# Called as each task's step ends: (executor name, task key, outcome).
OutcomeCallback = Callable[[str, str, Outcome], None]


@dataclass
class StepReport:
    """Per-key outcomes of one executor over a batch, plus counts for metadata.

    A success is kept as its key and whether it was skipped: its metadata goes to the outcome
    callback (the partition's event) as the step ends and is not read again. Keeping it here
    (md5, URL, a tuple) cost ~730 bytes per task in each shard and again where shard reports
    are merged (measured at 100,000 tasks), a gigabyte and more at a million.
    """

    executor: str
    succeeded: dict[str, bool] = field(default_factory=dict)  # key -> skipped, in order
    errors: dict[str, StepResult] = field(default_factory=dict)
    not_ready: list[str] = field(default_factory=list)

    def add(self, result: StepResult) -> "Outcome | None":
        """Keep what the run's events need of one step result; returns the outcome for the
        task's event (None for a task whose upstream is missing)."""
        if result.error_kind == UPSTREAM:
            self.not_ready.append(result.key)
            return None
        if not result.ok:
            self.errors[result.key] = result
            return result
        done = Succeeded(
            result.attempts,
            result.http_status,
            result.size,
            result.md5,
            result.outcome == "SKIPPED",
            result.url,
        )
        self.succeeded[result.key] = done.skipped
        return done

    def merge(self, other: "StepReport") -> None:
        """Take in the outcomes of `other` (disjoint keys: another shard's)."""
        self.succeeded.update(other.succeeded)
        self.errors.update(other.errors)
        self.not_ready.extend(other.not_ready)

    @property
    def tasks(self) -> int:
        """How many tasks the step reported on."""
        return len(self.succeeded) + len(self.errors) + len(self.not_ready)

    @property
    def failed(self) -> list[str]:
        """Keys whose step ended in an error (not counting tasks whose upstream is missing)."""
        return list(self.errors)

    def counts_by_outcome(self) -> Counter[str]:
        """SUCCESS / SKIPPED / ERROR counts (tasks not ready are left out)."""
        skipped = sum(self.succeeded.values())
        counts: Counter[str] = Counter()
        for outcome, count in (
            ("SUCCESS", len(self.succeeded) - skipped),
            ("SKIPPED", skipped),
            ("ERROR", len(self.errors)),
        ):
            if count:
                counts[outcome] = count
        return counts

    def counts_by_error(self) -> Counter[tuple[str, str]]:
        """(error kind, error class) counts of the failed keys."""
        return Counter((r.error_kind or "", r.error_class or "") for r in self.errors.values())

    def markdown(self) -> str:
        """A small markdown table: outcomes, then error kinds and classes."""
        lines = ["| outcome | kind | error class | tasks |", "|---|---|---|---|"]
        for outcome, count in sorted(self.counts_by_outcome().items()):
            if outcome != "ERROR":
                lines.append(f"| {outcome} | | | {count} |")
        if self.not_ready:
            lines.append(f"| NOT READY | upstream | | {len(self.not_ready)} |")
        for (kind, cls), count in sorted(self.counts_by_error().items()):
            lines.append(f"| ERROR | {kind} | {cls} | {count} |")
        return "\n".join(lines)


def to_row(result: StepResult, run_id: str | None) -> StepRow:
    """The DuckDB row of a step result (domain from the URL, never credentials)."""
    domain = URL(result.url).host if result.url else None
    return StepRow(
        key=result.key,
        executor=result.executor,
        status=result.outcome,
        error_class=result.error_class,
        error_kind=result.error_kind,
        message=result.message,
        attempts=result.attempts,
        http_status=result.http_status,
        size=result.size,
        md5=result.md5,
        proxy_host=result.proxy_host,
        domain=domain,
        run_id=run_id,
        started_at=result.started.replace(tzinfo=None),
        ended_at=result.ended.replace(tzinfo=None),
    )


async def run_step(
    layout: DataLayout,
    executor: Executor,
    keys: Sequence[str],
    *,
    settings: ScrapeSettings | None = None,
    proxy_provider: ProxyProvider | None = None,
    requires: Sequence[str] = (),
    force: bool = False,
    max_age_seconds: float | None = None,
    timeout_seconds: float | None = None,
    max_parallelism: int | None = None,
    run_id: str | None = None,
) -> StepReport:
    """Run `executor` for `keys` (params come from their status files) and record every outcome.

    Every result goes to the status files (atomically, per step) and to DuckDB through the
    ledger's spool, which is synced at the end without ever failing on DuckDB's lock.
    """
    reports = await run_chain(
        layout,
        [executor],
        keys,
        settings=settings,
        proxy_provider=proxy_provider,
        requires=requires,
        force=force,
        max_age_seconds=max_age_seconds,
        timeout_seconds=timeout_seconds,
        max_parallelism=max_parallelism,
        run_id=run_id,
    )
    return reports[executor_name(executor)]


async def run_chain(
    layout: DataLayout,
    executors: Sequence[Executor],
    keys: Sequence[str],
    *,
    settings: ScrapeSettings | None = None,
    proxy_provider: ProxyProvider | None = None,
    requires: Sequence[str] = (),
    step_requires: Mapping[str, Sequence[str]] | None = None,
    force: bool = False,
    max_age_seconds: float | None = None,
    timeout_seconds: float | None = None,
    max_parallelism: int | None = None,
    run_id: str | None = None,
    on_outcome: OutcomeCallback | None = None,
    grow: Grow | None = None,
    max_output_bytes: int = MAX_OUTPUT_BYTES,
) -> dict[str, StepReport]:
    """Run `executors` in order for each of `keys`, a task at a time through the whole chain
    (scrapeflow's `execute_async(executors=[...])`), and record every outcome.

    A task whose step fails goes no further down the chain in this pass: the later executors'
    reports do not name it. Tasks whose `requires` have not succeeded are `not_ready` in the
    first executor's report.

    Args:
        requires: executors outside `executors` that must have succeeded first.
        step_requires: per executor name, what its output is built from (see `execute_async`).
        on_outcome: called as each task's step ends (not for tasks whose upstream is
            missing), e.g. to report it at once rather than when the whole batch is done.
        grow: what adds tasks to the pass as tasks finish (`execute_async`).
        max_output_bytes: an output larger than this (as JSON) is recorded in `outputs` by its
            size only (its status file keeps it whole).

    Returns:
        One report per executor name, in chain order.
    """
    layout.ensure()
    sweep_stale_temp_files(layout.status_dir)
    reports = {executor_name(e): StepReport(executor=executor_name(e)) for e in executors}
    # Spool every 1,000 rows: a killed run loses at most that many DuckDB rows (the status
    # files still have them; `scrapeflow db rebuild` restores them).
    # Journaled: `scrapeflow status` then reads the files this run's unspooled rows lag behind
    # without a `stat` of every status file (`open_markers`).
    ledger = Ledger(
        layout.db_path, spool_dir=layout.spool_dir, run_id=run_id, batch_rows=1000, journal=True
    )
    with ledger:
        for executor in executors:
            declared = declared_output(executor)
            if declared is not None:
                ledger.record_output_columns(OutputColumnsRow(executor_name(executor), declared))

        def on_step(result: StepResult) -> None:
            kept = reports[result.executor].add(result)
            if kept is not None and on_outcome is not None:
                on_outcome(result.executor, result.key, kept)
            if result.outcome != "SKIPPED" and result.error_kind != UPSTREAM:
                ledger.record_step(to_row(result, run_id))
            if result.output is not None:
                ended = result.ended.replace(tzinfo=None)
                ledger.record_output(
                    OutputRow.of(
                        result.key,
                        result.executor,
                        result.output,
                        url=result.url,
                        ended_at=ended,
                        max_bytes=max_output_bytes,
                    )
                )
                page = PageRow.from_output(result.key, result.output, parsed_at=ended)
                if page is not None:
                    ledger.record_page(page)

        await execute_async(
            executors,
            layout.status_dir,
            keys,
            timeout=timeout_seconds,
            force_executors=["all"] if force else None,
            max_parallelism=max_parallelism,
            proxy_provider=proxy_provider,
            settings=settings,
            on_step=on_step,
            before_write=ledger.announce,
            requires=requires,
            step_requires=step_requires,
            max_age_seconds=max_age_seconds,
            grow=grow,
        )
    if settings is not None and settings.history_keep_days > 0:
        # This run's rows are in: the first run of the day to end trims the history (a
        # per-run cost of one failed create-only `open` for the others).
        prune_once_a_day(layout.db_path, layout.root, settings.history_keep_days)
    return reports
