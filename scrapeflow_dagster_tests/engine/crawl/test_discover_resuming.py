"""`discover` resuming: after a kill (a torn line, a batch left unapplied), beside a user holding
DuckDB or another adder, and when the status folder was made anew under an old frontier."""

import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.crawl import discover
from scrapeflow_dagster.engine.crawl.frontier.batches import FrontierBatch, batches, save_batch
from scrapeflow_dagster.engine.crawl.frontier.expanded_and_added import expanded_keys
from scrapeflow_dagster.engine.crawl.frontier.generation import GENERATION_NAME, RETIRED_DIR_NAME
from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.state.files import iter_status_files
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.tasks.keys import request_key
from scrapeflow_dagster_tests.engine.crawl.conftest import SEED
from scrapeflow_dagster_tests.engine.crawl.helpers import (
    frontier,
    params_of,
    parsed,
    run_discovery,
    seed,
)

HOLD_DUCKDB = (
    "import sys, duckdb; conn = duckdb.connect(sys.argv[1]); print('ready', flush=True); "
    "sys.stdin.read()"
)


def test_a_line_torn_by_a_kill_is_cut_off_not_read_as_a_key(layout: DataLayout) -> None:
    root = seed(layout, SEED, max_depth=3)
    parsed(layout, root, ["http://shop.example.com/graph/1", "http://shop.example.com/graph/2"])
    first, second = run_discovery(layout, [root]).keys
    # A writer killed while appending a longer key left only the first key's worth of it.
    with (layout.root / "frontier" / "expanded.txt").open("ab") as torn:
        torn.write(first.encode())

    parsed(layout, second, [])
    run_discovery(layout, [second])
    assert expanded_keys(layout) == {root, second}
    # So the page whose key the torn line spelt still has its links taken in.
    parsed(layout, first, ["http://shop.example.com/graph/3"])
    found = run_discovery(layout, [first])
    assert [params_of(layout, key)["url"] for key in found.keys] == [
        "http://shop.example.com/graph/3"
    ]


def test_a_batch_left_unapplied_by_a_kill_is_applied_by_the_next_discovery(
    layout: DataLayout,
) -> None:
    root = seed(layout, SEED, max_depth=2)
    url = "http://shop.example.com/graph/1"
    child = request_key(url)
    # What a discovery killed right after writing its batch leaves behind.
    row = {"crawl": root, "parent": root, "depth": 1, "discovered_at": "2026-01-01T00:00:00"}
    save_batch(
        layout,
        FrontierBatch(
            id="00000000000000000001-1",
            parents=[root],
            children=[{"key": child, "params": {"url": url, "depth": 1, "crawl": root}}],
            rows=[{**row, "url": url, "child": child, "outcome": "added"}],
        ),
    )
    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        found = discover(layout, [root], ledger=ledger)
    assert found.batch is None  # the root is expanded: by the replayed batch
    assert params_of(layout, child)["crawl"] == root
    assert [(b.id, b.applied, b.keys) for b in batches(layout)] == [
        ("00000000000000000001-1", True, [child])
    ]
    assert [r["outcome"] for r in frontier(layout)] == ["added"]


def test_discovery_while_a_user_holds_duckdb_loses_no_row(
    layout: DataLayout, tmp_path: Path
) -> None:
    root = seed(layout, SEED, max_depth=2)
    parsed(layout, root, [f"http://shop.example.com/graph/{n}" for n in range(1, 4)])
    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        ledger.sync()  # the file exists, as it does once anything ran
    holder = subprocess.Popen(  # a user's open read-write session, e.g. the duckdb shell
        [sys.executable, "-c", HOLD_DUCKDB, str(layout.db_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        ledger = Ledger(layout.db_path, spool_dir=layout.spool_dir)
        found = discover(layout, [root], ledger=ledger)
        assert len(found.keys) == 3
        synced = ledger.close(lock_timeout_seconds=0.5)
        assert synced is not None and synced.locked  # held: the rows wait in the spool
    finally:
        holder.kill()
        holder.wait()
    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        ledger.sync()
    assert [r["outcome"] for r in frontier(layout)] == ["added"] * 3


def test_a_child_another_adder_stored_before_the_batch_is_applied_stays_theirs(
    layout: DataLayout,
) -> None:
    root = seed(layout, SEED, max_depth=2)
    url = "http://shop.example.com/graph/1"
    child = request_key(url)
    row = {"crawl": root, "parent": root, "depth": 1, "discovered_at": "2026-01-01T00:00:00"}
    save_batch(  # planned by a discovery killed before it stored anything
        layout,
        FrontierBatch(
            id="00000000000000000001-1",
            parents=[root],
            children=[{"key": child, "params": {"url": url, "depth": 1, "crawl": root}}],
            rows=[{**row, "url": url, "child": child, "outcome": "added"}],
        ),
    )
    seed(layout, url, key=child, note="the inbox's")  # meanwhile, under the same key
    before = (layout.status_dir / f"{child}.status.json").read_bytes()
    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        found = discover(layout, [root], ledger=ledger)
    assert found.batch is None
    assert (layout.status_dir / f"{child}.status.json").read_bytes() == before
    assert [r["outcome"] for r in frontier(layout)] == ["known"]


def test_a_status_folder_made_anew_starts_the_frontier_over(
    layout: DataLayout, caplog: pytest.LogCaptureFixture
) -> None:
    links = [f"http://shop.example.com/graph/{n}" for n in range(1, 4)]
    root = seed(layout, SEED, max_depth=2)
    parsed(layout, root, links)
    first = run_discovery(layout, [root])
    assert len(first.keys) == 3
    # Starting over as `make clean` does, or a user deleting the status files: the frontier's
    # files still say the seed's links were taken in, and would hide every link of the crawl.
    shutil.rmtree(layout.status_dir)
    layout.ensure()
    assert expanded_keys(layout) == set() and batches(layout) == []
    assert seed(layout, SEED, max_depth=2) == root
    parsed(layout, root, links)
    with caplog.at_level(
        logging.WARNING, logger="scrapeflow_dagster.engine.crawl.frontier.generation"
    ):
        again = run_discovery(layout, [root])
    assert sorted(again.keys) == sorted(first.keys)
    assert expanded_keys(layout) == {root}
    # The old files are kept aside, not deleted, and the warning says where.
    (retired,) = (layout.root / "frontier" / RETIRED_DIR_NAME).iterdir()
    assert (retired / "expanded.txt").read_text() == f"{root}\n"
    assert str(layout.status_dir) in caplog.text and str(retired) in caplog.text
    # The identity file is no status file.
    assert len(list(iter_status_files(layout.status_dir))) == 4


def test_frontier_files_from_before_identities_stay_the_status_folders(layout: DataLayout) -> None:
    root = seed(layout, SEED, max_depth=2)
    parsed(layout, root, [f"http://shop.example.com/graph/{n}" for n in range(1, 4)])
    run_discovery(layout, [root])
    (layout.root / "frontier" / GENERATION_NAME).unlink()  # as an older version left them
    assert expanded_keys(layout) == {root}
    again = run_discovery(layout, [root])
    assert again.keys == [] and expanded_keys(layout) == {root}
    assert not (layout.root / "frontier" / RETIRED_DIR_NAME).exists()


def test_frontier_files_from_before_identities_naming_no_stored_task_are_retired(
    layout: DataLayout,
) -> None:
    # What an older `make clean` (status folder and DuckDB deleted, `frontier/` kept) left.
    links = [f"http://shop.example.com/graph/{n}" for n in range(1, 4)]
    root = seed(layout, SEED, max_depth=2)
    parsed(layout, root, links)
    first = run_discovery(layout, [root])
    (layout.root / "frontier" / GENERATION_NAME).unlink()
    shutil.rmtree(layout.status_dir)
    layout.ensure()
    assert seed(layout, SEED, max_depth=2) == root
    parsed(layout, root, links)
    assert sorted(run_discovery(layout, [root]).keys) == sorted(first.keys)
    (retired,) = (layout.root / "frontier" / RETIRED_DIR_NAME).iterdir()
    assert retired.name.endswith("-unnamed")
