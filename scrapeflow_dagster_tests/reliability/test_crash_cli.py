"""SIGKILL the real `dagster asset materialize` at random moments, resume, and lose nothing.

The site runs in its own process; each run is a process group (the CLI and its step worker),
killed whole with SIGKILL a seeded random delay after its step started. Resuming is running the
same command again. After a last, uninterrupted run every task is a success or a recorded
permanent failure, every status file parses, every body matches its md5, and DuckDB rebuilt from
the status files agrees with them.
"""

import json
import random
import subprocess
import time
from pathlib import Path

import dagster as dg
import pytest

from scrapeflow_dagster.dagster_cli import materialize_range_command
from scrapeflow_dagster_tests.reliability.conftest import Homes
from scrapeflow_dagster_tests.reliability.helpers import (
    assert_success_blobs_match,
    error_class,
    read_all_statuses,
    scrapeflow,
    snapshot_files,
)
from scrapeflow_dagster_tests.support.ledger import current_state, query
from scrapeflow_dagster_tests.support.partitions import Status, keys_with, partition_statuses
from scrapeflow_dagster_tests.support.paths import PYTHON
from scrapeflow_dagster_tests.support.processes import kill_group, wait_for_text
from scrapeflow_dagster_tests.support.sites import site_process

SEED = 20_241_122
PAGES = 1995
GONE_AT = (0, 400, 800, 1200, 1600)  # a /status/404 task is inserted before these pages
KILLS = 5
# The chain step "executor_chain", or "executor_chain.executor_chain_plan" when the shipped
# assets are sharded (several cores): its shards start a few seconds later, still inside the
# kill window below.
STEP_STARTED = 'STEP_START - Started execution of step "executor_chain'
KILL_DELAY_SECONDS = (1.0, 8.0)
# With 20 ms per answer and 4 requests in flight the scrape of 2,000 pages lasts about 10 s, so
# kills land in it and not only in Dagster's bookkeeping before and after it.
LATENCY_SECONDS = 0.02
RUN_CONFIG = json.dumps({"resources": {"scrape_settings": {"config": {"max_parallelism": 4}}}})


def write_tasks(path: Path, base_url: str) -> tuple[list[str], set[str]]:
    """The task file: pages with a few 404s among them; returns keys in order and the 404s."""
    keys: list[str] = []
    gone: set[str] = set()
    lines = ["key,url"]
    for n in range(PAGES):
        if n in GONE_AT:
            key = f"gone-{n:05d}"
            gone.add(key)
            keys.append(key)
            lines.append(f"{key},{base_url}/status/404")
        keys.append(f"page-{n:05d}")
        lines.append(f"page-{n:05d},{base_url}/page/{n}")
    path.write_text("\n".join(lines) + "\n")
    return keys, gone


def successes(status_dir: Path) -> int:
    """Status files that record a scrape SUCCESS (every one must parse)."""
    return sum(s.get("scrape_status") == "SUCCESS" for s in read_all_statuses(status_dir).values())


@pytest.mark.slow
def test_sigkill_at_random_moments_then_resume_loses_nothing(
    homes: Homes, instance: dg.DagsterInstance
) -> None:
    rng = random.Random(SEED)
    env = homes.env()
    status_dir = homes.layout.status_dir
    # Every answer carries its own serial number: a body from one fetch under the status of
    # another would not match its md5.
    with site_process(
        pages=PAGES, page_bytes=20_000, latency_seconds=LATENCY_SECONDS, stamp=True
    ) as base_url:
        keys, gone = write_tasks(homes.root / "tasks.csv", base_url)
        assert len(keys) == 2000
        added = scrapeflow(["tasks", "add", str(homes.root / "tasks.csv")], env)
        assert added.returncode == 0, added.stderr
        command = materialize_range_command("scrape", keys[0], keys[-1], config_json=RUN_CONFIG)

        done_before: list[int] = []
        done_after: list[int] = []
        for attempt in range(KILLS):
            delay = rng.uniform(*KILL_DELAY_SECONDS)
            log = homes.root / f"killed-run-{attempt}.log"
            done_before.append(successes(status_dir))
            with log.open("wb") as out:
                proc = subprocess.Popen(
                    command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                )
            try:
                started = wait_for_text(log, STEP_STARTED, proc, timeout=300)
                assert started, log.read_text()[-3000:]
                time.sleep(delay)
            finally:
                kill_group(proc)
            done_after.append(successes(status_dir))

        before_final = snapshot_files(status_dir)
        final = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    output = final.stdout + final.stderr
    # The run fails only because of the recorded permanent failures, not because of a crash.
    assert final.returncode != 0
    assert f"Failure: scrape: {len(gone)} of {len(keys)} tasks failed" in output, output[-3000:]

    # At least one kill cut a scrape in the middle (some tasks done in that run, some not).
    interrupted = [
        i for i in range(KILLS) if done_before[i] < done_after[i] < len(keys) - len(gone)
    ]
    assert interrupted, (done_before, done_after)

    statuses = read_all_statuses(status_dir)  # every status file parses
    assert sorted(statuses) == sorted(keys)
    for key, status in statuses.items():
        if key in gone:
            assert status["scrape_status"] == "ERROR HttpStatusError::HTTP response 404", key
            assert status["scrape_error_kind"] == "permanent"
            assert not (status_dir / f"{key}.scrape").exists()
        else:
            assert status["scrape_status"] == "SUCCESS", (key, status.get("scrape_status"))
    assert assert_success_blobs_match(status_dir, statuses) == len(keys) - len(gone)
    # Resuming is idempotent: what had succeeded before the last run is left byte for byte.
    after_final = snapshot_files(status_dir)
    for key in keys:
        name = f"{key}.status.json"
        if json.loads(before_final[name]).get("scrape_status") == "SUCCESS":
            assert after_final[name] == before_final[name], key
            assert after_final[f"{key}.scrape"] == before_final[f"{key}.scrape"], key

    # Before the rebuild DuckDB may miss rows of killed runs, but never contradicts a file.
    synced = scrapeflow(["db", "sync"], env)
    assert synced.returncode == 0, synced.stderr
    for key, row in current_state(homes.layout.db_path, "scrape").items():
        assert row["status"] == statuses[key]["scrape_status"].split(" ")[0], key
        if row["status"] == "SUCCESS":
            assert row["md5"] == statuses[key]["scrape"]["content"], key

    rebuilt = scrapeflow(["db", "rebuild"], env)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "unreadable" not in rebuilt.stderr
    state = current_state(homes.layout.db_path, "scrape")
    assert sorted(state) == sorted(keys)
    for key, status in statuses.items():
        row = state[key]
        if status["scrape_status"] == "SUCCESS":
            assert (row["status"], row["md5"]) == ("SUCCESS", status["scrape"]["content"]), key
        else:
            assert row["status"] == "ERROR", key
            assert row["error_class"] == error_class(status["scrape_status"]), key
    tasks_rows = query(homes.layout.db_path, "SELECT count(*) FROM tasks")
    assert tasks_rows == [(len(keys),)]

    # Dagster's view after the last run: the pages materialised, the 404s failed.
    found = partition_statuses(instance, "scrape", keys)
    assert keys_with(found, Status.FAILED) == gone
    materialized = keys_with(found, Status.MATERIALIZED)
    assert materialized == set(keys) - gone


_WRITER_SCRIPT = """
import itertools
import sys
from pathlib import Path

from scrapeflow_dagster.engine.status import write_status

folder = Path(sys.argv[1])
filler = "x" * 4_000_000  # a write takes milliseconds: most kills land inside one
for version in itertools.count():
    write_status(folder, "big", {"name": "big", "params": {"url": "http://x/", "f": filler},
                                 "version": version})
    if version == 0:
        print("ready", flush=True)  # the file exists
"""


def test_sigkill_during_status_writes_leaves_the_old_or_the_new_file(homes: Homes) -> None:
    """A process that does nothing but rewrite one large status file, killed at random
    moments: the file always parses whole."""
    rng = random.Random(SEED)
    folder = homes.root / "status"
    folder.mkdir()
    kills_inside_writes = 0
    for _ in range(12):
        proc = subprocess.Popen(
            [PYTHON, "-c", _WRITER_SCRIPT, str(folder)],
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
            time.sleep(rng.uniform(0.05, 0.4))
        finally:
            kill_group(proc)
        leftovers = [p for p in folder.iterdir() if p.name.endswith(".tmp")]
        kills_inside_writes += bool(leftovers)
        for path in leftovers:  # what a kill inside a write leaves: hidden from every reader
            assert path.name.startswith(".")
            path.unlink()
        statuses = read_all_statuses(folder)
        assert list(statuses) == ["big"]
        assert len(statuses["big"]["params"]["f"]) == 4_000_000
    # Kills did land inside writes (about two in three do), else no torn file could be caught.
    assert kills_inside_writes >= 2, kills_inside_writes
