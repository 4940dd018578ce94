"""`dagster dev` as users start it, and a partition backfill launched the way the UI does it
(the `launchPartitionBackfill` GraphQL mutation), run to completion by the daemon."""

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from scrapeflow_dagster.defs.partitions import TASKS_PARTITIONS_NAME, add_task_partitions
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.defs.helpers import (
    BIN_DIR,
    Status,
    free_port,
    process_env,
    statuses,
    store_tasks,
)

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
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        assert process.poll() is None, f"dagster dev exited:\n{server.log_tail()}"
        try:
            with urllib.request.urlopen(f"{server.url}/server_info", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    raise AssertionError(f"dagster dev did not answer in time:\n{server.log_tail()}")


def stop(process: subprocess.Popen) -> None:
    """Stop `dagster dev` and everything it started (its own process group)."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


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
        stop(process)


def wait_for_backfill(server: Webserver, backfill_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + BACKFILL_TIMEOUT_SECONDS
    while True:
        backfill = server.graphql(BACKFILL_STATUS, id=backfill_id)["partitionBackfillOrError"]
        assert backfill["__typename"] == "PartitionBackfill", backfill
        if backfill["status"] in TERMINAL:
            return backfill
        assert time.monotonic() < deadline, f"backfill still {backfill}:\n{server.log_tail()}"
        time.sleep(1.0)


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
        assert statuses(instance, "scrape", keys) == dict.fromkeys(keys, Status.MATERIALIZED)
        runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/backfill": backfill["id"]}))
    assert len(runs) == 1, "single_run backfill policy: one run for the whole range"
    assert runs[0].status == dg.DagsterRunStatus.SUCCESS
    assert all((layout.status_dir / f"{key}.scrape").exists() for key in keys)
