"""`changes_report` materialised in a Dagster instance over a data folder whose `/changing/`
pages the shipped chain fetched as the site changed them: the instance keeps, materialisation
after materialisation, the numbers the engine's `change_summary` reads from DuckDB."""

import urllib.request
from collections.abc import Callable
from typing import Any

import dagster as dg

from scrapeflow_dagster.defs.changes_report import (
    METADATA_HOSTS,
    changes_report,
    changes_report_schedule,
    host_metadata,
    host_metadata_key,
)
from scrapeflow_dagster.engine.history.reading.change_report import (
    NO_CHANGE_YET,
    HostChanges,
    change_summary,
)
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.lib.chain import CHAIN_NODE_NAME
from scrapeflow_dagster.site.content.changing import version_at
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.defs.conftest import Materialize
from scrapeflow_dagster_tests.support.tasks import TaskRows

HOUR = 3600.0
PAGES = 12  # the first half on 127.0.0.1, the rest on localhost
CHAIN = ["scrape", "validation", "pages"]
REFETCH = {"ops": {CHAIN_NODE_NAME: {"config": {"refresh_older_than_seconds": 0}}}}
NUMBERS = (
    "changes_in_window",
    "pages_changed_in_window",
    "pages_observed",
    "pages_due",
    "changes_total",
)


def set_clock(site: SiteThread, seconds: float) -> None:
    request = urllib.request.Request(
        site.url(f"/control/changing/clock?t={seconds}"), method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def report_metadata(instance: dg.DagsterInstance) -> list[dict[str, Any]]:
    """The metadata of every `changes_report` materialisation the instance holds, oldest
    first, as plain values."""
    records = instance.fetch_materializations(dg.AssetKey("changes_report"), limit=100).records
    events = sorted(records, key=lambda record: record.storage_id)
    return [
        {name: value.value for name, value in record.asset_materialization.metadata.items()}
        for record in events
        if record.asset_materialization is not None
    ]


def test_the_instance_keeps_the_engine_summary_of_each_materialisation(
    site_thread: SiteThread,
    add_task_rows: Callable[[TaskRows], list[str]],
    materialize_range: Materialize,
    instance: dg.DagsterInstance,
    resources: dict[str, Any],
    layout: DataLayout,
) -> None:
    port = int(site_thread.base_url.rsplit(":", 1)[1])
    rows = [(f"c{n}", site_thread.url(f"/changing/{n}")) for n in range(PAGES // 2)]
    rows += [(f"c{n}", f"http://LOCALHOST:{port}/changing/{n}?v=1") for n in range(6, PAGES)]
    keys = add_task_rows(rows)
    assert materialize_range(CHAIN, keys[0], keys[-1]).success
    assert dg.materialize([changes_report], instance=instance, resources=resources).success
    set_clock(site_thread, 48 * HOUR)
    assert materialize_range(CHAIN, keys[0], keys[-1], run_config=REFETCH).success

    assert dg.materialize([changes_report], instance=instance, resources=resources).success

    before, after = report_metadata(instance)
    assert {name: before[name] for name in NUMBERS} == {
        **dict.fromkeys(NUMBERS, 0),
        "pages_observed": PAGES,
    }
    assert NO_CHANGE_YET in before["summary"]
    summary = change_summary(layout)
    assert {name: after[name] for name in NUMBERS} == {
        name: getattr(summary, name) for name in NUMBERS
    }
    changed = [n for n in range(PAGES) if version_at(n, 48 * HOUR) > 0]
    assert min(changed) < PAGES // 2 <= max(changed)  # pages of both hosts changed
    assert summary.changes_total == summary.pages_changed_in_window == len(changed)
    assert after["median_interval_hours"] == summary.median_interval_hours
    per_host = {f"changes_127_0_0_1_{port}": 0, f"changes_localhost_{port}": 0}
    for n in changed:
        per_host[
            f"changes_127_0_0_1_{port}" if n < PAGES // 2 else f"changes_localhost_{port}"
        ] += 1
    assert {name: v for name, v in after.items() if name in per_host} == {
        name: v for name, v in per_host.items() if v
    }
    # The same Markdown, but for the first line's time (to the minute).
    assert after["summary"].split("\n", 1)[1] == summary.markdown().split("\n", 1)[1]
    for n in changed:
        assert f"| {rows[n][1]} |" in after["summary"]


def test_host_keys_are_metadata_safe_and_only_the_busiest_hosts_get_one() -> None:
    assert host_metadata_key("127.0.0.1:8080") == "changes_127_0_0_1_8080"
    assert host_metadata_key("Shop.Example-Store.com") == "changes_shop_example_store_com"
    assert host_metadata_key("") == "changes_no_host"
    assert host_metadata_key("total") == "changes_total_host"  # not the all-time total
    hosts = [HostChanges(f"h{n}.example", 100 - n, 1) for n in range(METADATA_HOSTS + 5)]
    assert list(host_metadata(hosts)) == [f"changes_h{n}_example" for n in range(METADATA_HOSTS)]
    assert host_metadata([HostChanges("a-b", 3, 1), HostChanges("a.b", 2, 2)]) == {"changes_a_b": 5}


def test_the_schedule_materialises_the_report_hourly() -> None:
    assert changes_report_schedule.cron_schedule == "0 * * * *"
    assert changes_report_schedule.target.assets_defs == [changes_report]
