"""The `changes_report` asset: which pages changed and how often, as numeric metadata the UI
plots over time and a Markdown summary."""

import re

import dagster as dg

from scrapeflow_dagster.defs.report_asset import report_schedule
from scrapeflow_dagster.engine.history.reading.change_report import HostChanges, change_summary
from scrapeflow_dagster.lib.resources import StatusStoreResource

CHANGES_REPORT_CRON_ENV = "SCRAPEFLOW_CHANGES_REPORT_CRON"
# Hosts given their own plotted number: each key is one more plot in the UI, for good.
METADATA_HOSTS = 10
# The asset's own keys that a host's key could spell (a host named `total`).
_TOTAL_KEYS = frozenset({"changes_total", "changes_in_window"})


def host_metadata_key(host: str) -> str:
    """`changes_<host>` with every run of characters other than letters and digits as one `_`
    (`127.0.0.1:8080` -> `changes_127_0_0_1_8080`): a key that stays the same across
    materialisations, so the UI plots one line per host. A host that would spell one of the
    totals' keys gets `_host` after it."""
    key = "changes_" + (re.sub(r"[^0-9a-z]+", "_", host.lower()).strip("_") or "no_host")
    return f"{key}_host" if key in _TOTAL_KEYS else key


def host_metadata(by_host: list[HostChanges]) -> dict[str, int]:
    """The changes of the first `METADATA_HOSTS` hosts, by `host_metadata_key`; two hosts that
    give the same key (`a-b` and `a.b`) add up under it."""
    counts: dict[str, int] = {}
    for host in by_host[:METADATA_HOSTS]:
        key = host_metadata_key(host.host)
        counts[key] = counts.get(key, 0) + host.changes
    return counts


@dg.asset(name="changes_report", group_name="reports", kinds={"duckdb"})
def changes_report(
    context: dg.AssetExecutionContext, status_store: StatusStoreResource
) -> dg.MaterializeResult:
    """Which pages changed and how often: changes found in the last 7 days (in all, by host,
    by page, by day), pages changed, pages observed and due for a revisit, and the median
    learned revisit interval, from DuckDB (the spool is synced first)."""
    summary = change_summary(status_store.layout())
    context.log.info(summary.markdown())
    return dg.MaterializeResult(
        metadata={
            "changes_in_window": summary.changes_in_window,
            "pages_changed_in_window": summary.pages_changed_in_window,
            "pages_observed": summary.pages_observed,
            "pages_due": summary.pages_due,
            "median_interval_hours": dg.MetadataValue.float(summary.median_interval_hours or 0.0),
            "changes_total": summary.changes_total,
            **host_metadata(summary.by_host),
            "summary": dg.MetadataValue.md(summary.markdown()),
        }
    )


changes_report_schedule = report_schedule(
    changes_report, CHANGES_REPORT_CRON_ENV, "0 * * * *", "hourly"
)
