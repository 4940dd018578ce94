"""The `crawl_report` asset: the crawl's health as numeric metadata the UI plots over time."""

import dagster as dg

from scrapeflow_dagster.defs.automation import cron_from_env
from scrapeflow_dagster.engine.history.reading.crawl_report import crawl_summary
from scrapeflow_dagster.lib.resources import StatusStoreResource

REPORT_CRON_ENV = "SCRAPEFLOW_REPORT_CRON"


@dg.asset(name="crawl_report", group_name="reports", kinds={"duckdb"})
def crawl_report(
    context: dg.AssetExecutionContext, status_store: StatusStoreResource
) -> dg.MaterializeResult:
    """Tasks, succeeded and failed fetches, success %, bytes, p95 fetch time, pages parsed, and
    failures by kind and by host, and the links and sitemap entries not followed by why (out
    of scope, disallowed, on another host, on a refused address), from DuckDB (the spool is
    synced first)."""
    summary = crawl_summary(status_store.layout())
    context.log.info(summary.markdown())
    return dg.MaterializeResult(
        metadata={
            "tasks": summary.tasks,
            "succeeded": summary.succeeded,
            "failed": summary.failed,
            "success_pct": dg.MetadataValue.float(summary.success_pct),
            "bytes": summary.bytes,
            "p95_fetch_seconds": dg.MetadataValue.float(summary.p95_seconds or 0.0),
            "pages_parsed": summary.pages_parsed,
            **{f"not_followed_{why}": n for why, n in summary.not_followed},
            "summary": dg.MetadataValue.md(summary.markdown()),
        }
    )


def report_schedule(
    asset: dg.AssetsDefinition, env: str, default_cron: str, default_words: str
) -> dg.ScheduleDefinition:
    """`<asset>_schedule`: materialise a report asset on the cron `$env` gives (read when the
    definitions load), `default_cron` ("`default_words`") when unset."""
    cron = cron_from_env(env, default_cron)
    name = asset.key.to_user_string()
    return dg.ScheduleDefinition(
        name=f"{name}_schedule",
        cron_schedule=cron,
        target=[asset],
        description=f"Cron {cron!r} (${env}, default {default_words}): materialise {name}.",
    )


crawl_report_schedule = report_schedule(
    crawl_report, REPORT_CRON_ENV, "*/30 * * * *", "every 30 minutes"
)
