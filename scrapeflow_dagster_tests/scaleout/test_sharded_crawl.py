"""A crawl streamed through a sharded run, through the real `dagster asset materialize`: each
shard takes in the links of the pages it parses and runs the new tasks in its own pass, every
page is fetched once, every partition ends materialised, and no frontier batch is left."""

import json
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from scrapeflow_dagster.engine.crawl.frontier.journal import frontier_dir
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.lib.partitions import TASKS_PARTITIONS_NAME, add_task_partitions
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.scaleout.helpers import last_run, materialised_by_step
from scrapeflow_dagster_tests.support.partitions import Status, partition_statuses
from scrapeflow_dagster_tests.support.paths import BIN_DIR, COMMAND_CWD
from scrapeflow_dagster_tests.support.processes import process_env
from scrapeflow_dagster_tests.support.tasks import store_tasks

CRAWL_DEFS = "scrapeflow_dagster_tests.scaleout.crawl_defs"
SEEDS = 20
DEPTH = 2  # a page links to 10 others: depth 2 reaches most of the site


@pytest.fixture
def site() -> Iterator[SiteThread]:
    with SiteThread(pages=SEEDS * 10, page_bytes=2000) as running:
        yield running


def page_requests(site: SiteThread) -> dict[str, int]:
    with urllib.request.urlopen(site.url("/control/requests"), timeout=10) as response:
        paths: dict[str, int] = json.load(response)["paths"]
    return {path: n for path, n in paths.items() if path.startswith("/page/")}


def test_each_shard_of_a_crawl_run_follows_the_links_of_the_pages_it_parses(
    site: SiteThread, layout: DataLayout, sqlite_home: Path, tmp_path: Path
) -> None:
    rows = [
        {"key": f"seed-{n:02d}", "url": site.url(f"/page/{10 * n}"), "max_depth": DEPTH}
        for n in range(SEEDS)
    ]
    seeds = store_tasks(layout, rows)
    with dg.DagsterInstance.from_config(str(sqlite_home)) as instance:
        add_task_partitions(instance, seeds)
    config = {
        "ops": {"executor_chain": {"config": {"follow_links": True}}},
        # Two shards even for this small run (the shipped minimum is far more tasks per shard).
        "resources": {"shard_settings": {"config": {"min_tasks_per_shard": 1}}},
    }
    command = [str(BIN_DIR / "dagster"), "asset", "materialize", "-m", CRAWL_DEFS]
    command += ["--select", "scrape,validation,pages"]
    command += ["--partition-range", f"{seeds[0]}...{seeds[-1]}"]
    command += ["--config-json", json.dumps(config)]
    done = subprocess.run(
        command,
        env=process_env(sqlite_home, layout.root, SCRAPEFLOW_SHARDS="2"),
        cwd=COMMAND_CWD,
        capture_output=True,
        text=True,
        timeout=300,
    )
    (tmp_path / "run.log").write_text(done.stdout + done.stderr)
    assert done.returncode == 0, done.stderr[-3000:]

    fetched = page_requests(site)
    assert set(fetched.values()) == {1}  # each page once, whichever shard found it
    with dg.DagsterInstance.from_config(str(sqlite_home)) as instance:
        keys = list(instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME))
        assert len(keys) == len(fetched) > 3 * SEEDS  # the links were followed
        assert len(instance.get_runs()) == 1
        for asset in ("scrape", "validation", "pages"):
            states = partition_statuses(instance, asset, keys)
            assert states == dict.fromkeys(keys, Status.MATERIALIZED), asset
        by_step = materialised_by_step(instance, last_run(instance).run_id, "pages")
    # Both shard steps took in the links of their own pages and ran the new tasks.
    assert len(by_step) == 2 and all(len(found) > SEEDS // 2 for found in by_step.values())
    assert sum(len(found) for found in by_step.values()) == len(keys)
    assert not list((frontier_dir(layout) / "batches").glob("*.json"))
