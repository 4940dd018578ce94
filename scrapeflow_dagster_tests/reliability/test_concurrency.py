"""Runs at the same time: two real `dagster asset materialize` processes over overlapping ranges
(one forced) on one data folder and one Dagster home lose no step result and leave every file
whole; and a DuckDB file held open by another process never fails a run or loses its rows."""

import json
import subprocess
from collections import Counter
from datetime import datetime

import dagster as dg
import pytest

from scrapeflow_dagster.dagster_cli import materialize_range_command
from scrapeflow_dagster.defs.automation import RANGE_END_TAG, RANGE_START_TAG
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.reliability.conftest import Homes
from scrapeflow_dagster_tests.reliability.helpers import (
    assert_success_blobs_match,
    read_all_statuses,
    scrape_range,
    scrapeflow,
)
from scrapeflow_dagster_tests.support.ledger import current_state, query
from scrapeflow_dagster_tests.support.paths import PYTHON
from scrapeflow_dagster_tests.support.sites import site_process
from scrapeflow_dagster_tests.support.tasks import store_and_add

TASKS = 400
# The forced run starts below the plain one and catches up with it: from then on it waits for
# the lock of each task the plain run holds, and scrapes it again right after.
RANGES = {"forced": (0, 299), "plain": (100, 399)}
# 4 requests in flight, 100 ms each: each run scrapes for 7-8 s, long enough to overlap even
# when one CLI starts seconds after the other (at 40 ms, on a machine loaded by a benchmark,
# the forced run was done before the plain one's first request: no task scraped by both).
SETTINGS = {"max_parallelism": 4}
LATENCY_SECONDS = 0.1


def config_json(*, force: bool) -> str:
    config: dict = {"resources": {"scrape_settings": {"config": SETTINGS}}}
    if force:
        config["ops"] = {"executor_chain": {"config": {"force": True}}}
    return json.dumps(config)


def check_counts(instance: dg.DagsterInstance, run_id: str) -> dict[str, int]:
    """The counts the `no_failed_tasks` check of a run recorded (succeeded, skipped, ...)."""
    records = instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
    (record,) = records
    assert record.dagster_event is not None
    metadata = record.dagster_event.event_specific_data.metadata  # type: ignore[union-attr]
    return {name: int(value.value) for name, value in metadata.items() if name != "summary"}


@pytest.mark.slow
def test_two_cli_runs_over_overlapping_ranges_lose_no_step_result(
    homes: Homes, instance: dg.DagsterInstance
) -> None:
    env = homes.env()
    keys = [f"task-{n:04d}" for n in range(TASKS)]
    with site_process(
        pages=TASKS, page_bytes=8000, latency_seconds=LATENCY_SECONDS, stamp=True
    ) as base_url:
        task_file = homes.root / "tasks.csv"
        task_file.write_text(
            "key,url\n" + "".join(f"{k},{base_url}/page/{n}\n" for n, k in enumerate(keys))
        )
        added = scrapeflow(["tasks", "add", str(task_file)], env)
        assert added.returncode == 0, added.stderr
        procs = {}
        for name, (first, last) in RANGES.items():
            command = materialize_range_command(
                "scrape", keys[first], keys[last], config_json=config_json(force=name == "forced")
            )
            procs[name] = subprocess.Popen(
                command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
        outputs = {name: proc.communicate(timeout=300)[0] for name, proc in procs.items()}
    for name, proc in procs.items():
        assert proc.returncode == 0, outputs[name][-3000:]

    statuses = read_all_statuses(homes.layout.status_dir)  # every file parses
    assert sorted(statuses) == keys
    assert all(s["scrape_status"] == "SUCCESS" for s in statuses.values())
    # Each page answer has its own bytes: a body of one run under the status of the other
    # would show here.
    assert assert_success_blobs_match(homes.layout.status_dir, statuses) == TASKS

    synced = scrapeflow(["db", "sync"], env)
    assert synced.returncode == 0, synced.stderr
    runs = {
        (run.tags[RANGE_START_TAG], run.tags[RANGE_END_TAG]): run for run in instance.get_runs()
    }
    rows = query(
        homes.layout.db_path,
        "SELECT run_id, key, started_at, ended_at FROM step_runs "
        "WHERE executor = 'scrape' AND status = 'SUCCESS'",
    )
    by_run: dict[str, Counter[str]] = {}
    spans: dict[str, tuple[datetime, datetime]] = {}
    for run_id, key, started, ended in rows:
        by_run.setdefault(run_id, Counter())[key] += 1
        low, high = spans.get(run_id, (started, ended))
        spans[run_id] = (min(low, started), max(high, ended))
    done_by: dict[str, set[str]] = {}
    for name, (first, last) in RANGES.items():
        run = runs[(keys[first], keys[last])]
        assert run.status == dg.DagsterRunStatus.SUCCESS
        counts = check_counts(instance, run.run_id)
        in_range = set(keys[first : last + 1])
        recorded = by_run.get(run.run_id, Counter())
        # One SUCCESS row per task the run scraped, none lost or doubled.
        assert set(recorded) <= in_range
        assert all(n == 1 for n in recorded.values()), recorded.most_common(3)
        assert len(recorded) == counts["succeeded"], (name, counts)
        assert counts["succeeded"] + counts["skipped"] == len(in_range), (name, counts)
        done_by[name] = set(recorded)
    # The forced run scraped all of its range; the plain one skipped only what the forced
    # one had already scraped; many tasks were scraped by both.
    assert done_by["forced"] == set(keys[0:300])
    assert set(keys[100:400]) - done_by["plain"] <= set(keys[100:300])
    assert len(done_by["forced"] & done_by["plain"]) >= 50, len(done_by["plain"])
    # The two really ran at the same time.
    forced_span, plain_span = (spans[runs[(keys[f], keys[t])].run_id] for f, t in RANGES.values())
    assert plain_span[0] < forced_span[1] and forced_span[0] < plain_span[1], spans
    # Whichever wrote last, DuckDB's current state and the status file agree.
    state = current_state(homes.layout.db_path, "scrape")
    for key, status in statuses.items():
        assert state[key]["md5"] == status["scrape"]["content"], key


_HOLDER_SCRIPT = """
import sys

import duckdb

conn = duckdb.connect(sys.argv[1])  # read-write: DuckDB lets no other process in
print("holding", flush=True)
sys.stdin.read()  # until the test closes our stdin
conn.close()
"""


def test_a_run_succeeds_while_another_process_holds_duckdb_and_sync_catches_up(
    homes: Homes, instance: dg.DagsterInstance
) -> None:
    layout = homes.layout
    with SiteThread(pages=200, page_bytes=2000) as site:
        keys = store_and_add(
            layout, instance, [(f"held-{n:03d}", site.url(f"/page/{n}")) for n in range(150)]
        )
        assert layout.db_path.exists()  # created by the intake's sync
        holder = subprocess.Popen(
            [PYTHON, "-c", _HOLDER_SCRIPT, str(layout.db_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
            result = scrape_range(instance, homes.data_dir, keys[0], keys[-1])
            assert result.success
            assert any(layout.spool_dir.glob("*.jsonl"))  # the rows wait in the spool
        finally:
            assert holder.stdin is not None
            holder.stdin.close()
            holder.wait(timeout=30)
    assert holder.returncode == 0

    synced = scrapeflow(["db", "sync"], homes.env())

    assert synced.returncode == 0, synced.stderr
    assert "locked=False" in synced.stdout
    rows = query(
        layout.db_path,
        "SELECT count(*), count(DISTINCT key) FROM step_runs "
        "WHERE executor = 'scrape' AND status = 'SUCCESS' AND run_id = ?",
        [result.run_id],
    )
    assert rows == [(len(keys), len(keys))]
    assert not any(layout.spool_dir.glob("*.jsonl"))
    statuses = read_all_statuses(layout.status_dir)
    assert all(statuses[k]["scrape_status"] == "SUCCESS" for k in keys)
