"""The frontier sensor in the real daemon: a seed dropped into the inbox with `max_depth` 2 is
crawled by `dagster-daemon run` alone (inbox, frontier and retry sensors started with `dagster
sensor start`), every page within the depth fetched once and parsed."""

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from scrapeflow_dagster.engine.crawl import pending_batches
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.tasks.keys import request_key
from scrapeflow_dagster.lib.partitions import TASKS_PARTITIONS_NAME
from scrapeflow_dagster.site.crawling.graph import nodes_within_depth
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.defs.test_daemon import (  # noqa: F401 (the daemon fixture)
    Daemon,
    daemon,
    drop_into_inbox,
    sensor_ticks,
)
from scrapeflow_dagster_tests.support.partitions import Status, partition_statuses

DEPTH = 2


@pytest.fixture
def graph_site() -> Iterator[SiteThread]:
    """The bundled site with its link graph."""
    with SiteThread(pages=10) as running:
        yield running


def _graph_counts(site: SiteThread) -> dict[str, int]:
    with urllib.request.urlopen(site.url("/control/requests"), timeout=10) as response:
        data: dict[str, Any] = json.load(response)
    return {p: n for p, n in data["paths"].items() if p.startswith("/graph/")}


@pytest.mark.slow  # 3-5 minutes: three rounds of sensor ticks and runs
def test_the_frontier_sensor_crawls_a_seed_in_the_daemon(
    graph_site: SiteThread,
    layout: DataLayout,
    daemon: Daemon,  # noqa: F811 (the fixture imported from test_daemon)
    tmp_path: Path,
) -> None:
    seed = {"url": graph_site.url("/graph/0"), "max_depth": DEPTH}
    expected = {
        f"/graph/{n}": request_key(graph_site.url(f"/graph/{n}")) for n in nodes_within_depth(DEPTH)
    }
    keys = list(expected.values())
    for name in ("inbox_sensor", "frontier_sensor", "retry_sensor"):
        assert "Started sensor" in daemon.cli("sensor", "start", name)
    daemon.start()
    drop_into_inbox(layout, tmp_path, "seed.jsonl", [json.dumps(seed)])

    with dg.DagsterInstance.get() as instance:

        def crawled() -> bool:
            partitions = set(instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME))
            if not partitions >= set(keys):
                return False
            return partition_statuses(instance, "pages", keys) == dict.fromkeys(
                keys, Status.MATERIALIZED
            )

        daemon.wait_until(crawled, "every page within depth 2 to be parsed")
        daemon.wait_until(lambda: not pending_batches(layout), "the frontier batches to finish")
        ticks = sensor_ticks(instance, "frontier_sensor")
        runs = instance.get_runs(filters=dg.RunsFilter(tags={"scrapeflow/reason": "frontier"}))
        partitions = instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME)

    for tick in ticks:
        assert tick.split(":")[0] in {"SUCCESS", "SKIPPED", "STARTED"}, tick
    assert len([t for t in ticks if t.startswith("SUCCESS")]) >= DEPTH
    assert len({run.tags["dagster/run_key"] for run in runs}) == len(runs) >= DEPTH
    # Each page within the depth fetched once; none deeper, none robots.txt disallows.
    assert _graph_counts(graph_site) == dict.fromkeys(expected, 1)
    # Private links never became tasks: the sensor's discovery reads robots.txt as the runs
    # cached it (the seed's scrape did, before any page was parsed); nothing deeper became one.
    assert sorted(partitions) == sorted(keys)
