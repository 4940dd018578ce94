"""One executor over a batch of task keys, recorded in DuckDB: what a Dagster asset run calls."""

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from yarl import URL

from scrapeflow_dagster.engine.atomic import sweep_stale_temp_files
from scrapeflow_dagster.engine.executor import Executor, execute_async, executor_name
from scrapeflow_dagster.engine.layout import DataLayout
from scrapeflow_dagster.engine.ledger import Ledger, StepRow
from scrapeflow_dagster.engine.proxies import ProxyProvider
from scrapeflow_dagster.engine.results import StepResult
from scrapeflow_dagster.engine.settings import ScrapeSettings

UPSTREAM = "upstream"


@dataclass
class StepReport:
    """Per-key outcomes of one executor over a batch, plus counts for metadata."""

    executor: str
    results: dict[str, StepResult] = field(default_factory=dict)

    @property
    def failed(self) -> list[str]:
        """Keys whose step ended in an error (not counting tasks whose upstream is missing)."""
        return [k for k, r in self.results.items() if not r.ok and r.error_kind != UPSTREAM]

    @property
    def not_ready(self) -> list[str]:
        """Keys not attempted because a required upstream step has not succeeded for them."""
        return [k for k, r in self.results.items() if r.error_kind == UPSTREAM]

    @property
    def succeeded(self) -> list[str]:
        """Keys whose step succeeded now or was skipped because it had already succeeded."""
        return [k for k, r in self.results.items() if r.ok]

    def counts_by_outcome(self) -> Counter[str]:
        """SUCCESS / SKIPPED / ERROR counts (tasks not ready are left out)."""
        return Counter(r.outcome for r in self.results.values() if r.error_kind != UPSTREAM)

    def counts_by_error(self) -> Counter[tuple[str, str]]:
        """(error kind, error class) counts of the failed keys."""
        return Counter(
            (r.error_kind or "", r.error_class or "")
            for r in self.results.values()
            if not r.ok and r.error_kind != UPSTREAM
        )

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
    layout.ensure()
    sweep_stale_temp_files(layout.status_dir)
    report = StepReport(executor=executor_name(executor))
    # Spool every 1,000 rows: a killed run loses at most that many DuckDB rows (the status
    # files still have them; `scrapeflow db rebuild` restores them).
    ledger = Ledger(layout.db_path, spool_dir=layout.spool_dir, run_id=run_id, batch_rows=1000)
    with ledger:

        def on_step(result: StepResult) -> None:
            report.results[result.key] = result
            if result.outcome != "SKIPPED" and result.error_kind != UPSTREAM:
                ledger.record_step(to_row(result, run_id))

        await execute_async(
            [executor],
            layout.status_dir,
            keys,
            timeout=timeout_seconds,
            force_executors=["all"] if force else None,
            max_parallelism=max_parallelism,
            proxy_provider=proxy_provider,
            settings=settings,
            on_step=on_step,
            requires=requires,
            max_age_seconds=max_age_seconds,
        )
    return report
