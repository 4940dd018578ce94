"""`dagster dev` as users start it, and a partition backfill launched the way the UI does it
(the `launchPartitionBackfill` GraphQL mutation), run to completion by the daemon."""

import json
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.lib.partitions import TASKS_PARTITIONS_NAME, add_task_partitions
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.support.partitions import Status, partition_statuses
from scrapeflow_dagster_tests.support.paths import BIN_DIR
from scrapeflow_dagster_tests.support.ports import free_port
from scrapeflow_dagster_tests.support.processes import process_env, stop_group, wait_until
from scrapeflow_dagster_tests.support.tasks import store_tasks

STARTUP_TIMEOUT_SECONDS = 120.0
BACKFILL_TIMEOUT_SECONDS = 180.0
TERMINAL = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}

LAUNCH_BACKFILL = """
mutation LaunchBackfill($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on Error { message }
  }
}
"""

BACKFILL_STATUS = """
query BackfillStatus($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    __typename
    ... on PartitionBackfill { id status numPartitions error { message } }
    ... on Error { message }
  }
}
"""

PARTITION_STATS = """
query PartitionStats($path: [String!]!) {
  assetNodeOrError(assetKey: {path: $path}) {
    __typename
    ... on AssetNode { partitionStats { numPartitions numMaterialized numFailed } }
  }
}
"""


class Webserver:
    """A running `dagster dev`; `graphql(query, **variables)` returns the `data` part."""

    def __init__(self, port: int, log_path: Path) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = log_path

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def graphql(self, query: str, **variables: Any) -> dict[str, Any]:
        body = json.dumps({"query": query, "variables": variables}).encode()
        request = urllib.request.Request(
            f"{self.url}/graphql", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = json.loads(response.read())
        assert not answer.get("errors"), answer["errors"]
        return answer["data"]


def wait_until_up(server: Webserver, process: subprocess.Popen) -> None:
    def answers() -> bool:
        try:
            with urllib.request.urlopen(f"{server.url}/server_info", timeout=2) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    wait_until(
        answers,
        what="dagster dev to answer",
        timeout_seconds=STARTUP_TIMEOUT_SECONDS,
        poll_seconds=0.5,
        process=process,
        log_tail=server.log_tail,
    )


@pytest.fixture
def webserver(dagster_home: Path, layout: DataLayout, tmp_path: Path) -> Iterator[Webserver]:
    port = free_port()
    server = Webserver(port, tmp_path / "dagster-dev.log")
    with server.log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                str(BIN_DIR / "dagster"),
                "dev",
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
                "-m",
                "scrapeflow_dagster.definitions",
            ],
            cwd=tmp_path,
            env=process_env(dagster_home, layout.root),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until_up(server, process)
        yield server
    finally:
        stop_group(process)  # dagster dev and everything it started


def wait_for_backfill(server: Webserver, backfill_id: str) -> dict[str, Any]:
    def finished() -> dict[str, Any] | None:
        backfill = server.graphql(BACKFILL_STATUS, id=backfill_id)["partitionBackfillOrError"]
        assert backfill["__typename"] == "PartitionBackfill", backfill
        return backfill if backfill["status"] in TERMINAL else None

    return wait_until(
        finished,
        what=f"backfill {backfill_id} to finish",
        timeout_seconds=BACKFILL_TIMEOUT_SECONDS,
        poll_seconds=1.0,
        log_tail=server.log_tail,
    )


@pytest.mark.slow  # about 70 s: the backfill daemon checks in every 30 s
def test_partition_backfill_launched_through_graphql_materialises_every_task(
    site_thread: SiteThread, layout: DataLayout, dagster_home: Path, webserver: Webserver
) -> None:
    rows = [(f"web-{n:02d}", site_thread.url(f"/page/{n}")) for n in range(30)]
    keys = store_tasks(layout, rows)
    with dg.DagsterInstance.get() as instance:  # the temp DAGSTER_HOME, shared with dagster dev
        add_task_partitions(instance, keys)
        assert instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME) == keys

    launched = webserver.graphql(
        LAUNCH_BACKFILL,
        params={
            "partitionNames": keys,
            "assetSelection": [{"path": ["scrape"]}],
            "fromFailure": False,
        },
    )["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched

    backfill = wait_for_backfill(webserver, launched["backfillId"])

    assert backfill["status"] in {"COMPLETED", "COMPLETED_SUCCESS"}, (
        f"{backfill}\n{webserver.log_tail()}"
    )
    assert backfill["numPartitions"] == len(keys)
    node = webserver.graphql(PARTITION_STATS, path=["scrape"])["assetNodeOrError"]
    assert node["partitionStats"] == {
        "numPartitions": len(keys),
        "numMaterialized": len(keys),
        "numFailed": 0,
    }
    with dg.DagsterInstance.get() as instance:
        assert partition_statuses(instance, "scrape", keys) == dict.fromkeys(
            keys, Status.MATERIALIZED
        )
        runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/backfill": backfill["id"]}))
    assert len(runs) == 1, "single_run backfill policy: one run for the whole range"
    assert runs[0].status == dg.DagsterRunStatus.SUCCESS
    assert all((layout.status_dir / f"{key}.scrape").exists() for key in keys)
