"""`discover` on real status files and a real DuckDB: scope, patterns, depth, dedupe, budget,
the frontier rows, and resuming."""

import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.crawl import (
    Discovery,
    DiscoveryMemo,
    discover,
    known_fingerprints,
    pending_batches,
)
from scrapeflow_dagster.engine.crawl.frontier.batches import (
    FrontierBatch,
    batches,
    frontier_lock,
    save_batch,
)
from scrapeflow_dagster.engine.crawl.frontier.expanded_and_added import (
    JournalTail,
    crawl_sizes,
    expanded_keys,
)
from scrapeflow_dagster.engine.crawl.frontier.generation import GENERATION_NAME, RETIRED_DIR_NAME
from scrapeflow_dagster.engine.crawl.frontier.journal import frontier_dir
from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.state.files import iter_status_files, load_status, write_status
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.schema import STATUS_SUFFIX, record_success, utc_now
from scrapeflow_dagster.engine.tasks.keys import request_key
from scrapeflow_dagster_tests.engine.crawl.helpers import (
    frontier,
    params_of,
    parsed,
    run_discovery,
    seed,
)

SEED = "http://shop.example.com/graph/0"
HOLD_DUCKDB = (
    "import sys, duckdb; conn = duckdb.connect(sys.argv[1]); print('ready', flush=True); "
    "sys.stdin.read()"
)


def _outcomes(layout: DataLayout) -> dict[str, str]:
    return {row["url"]: row["outcome"] for row in frontier(layout)}


def test_links_in_scope_become_tasks_with_the_seeds_settings(layout: DataLayout) -> None:
    root = seed(layout, SEED, max_depth=2, allow=[r"/graph/"], max_pages=50)
    parsed(
        layout,
        root,
        [
            "http://shop.example.com/graph/1",
            "http://SHOP.example.com:80/graph/2",  # same request as .../graph/2 below
            "http://shop.example.com/graph/2",
            "http://shop.example.com/graph/3?b=2&a=1",
            "http://other.example.com/graph/4",  # another host
            "ftp://shop.example.com/graph/5",
            "http://shop.example.com/about",  # no allow match
        ],
    )
    found = run_discovery(layout, [root])
    child = request_key("http://shop.example.com/graph/1")
    assert sorted(found.keys) == sorted(
        request_key(f"http://shop.example.com/graph/{n}") for n in ("1", "2", "3?a=1&b=2")
    )
    assert params_of(layout, child) == {
        "url": "http://shop.example.com/graph/1",
        "max_depth": 2,
        "scope": "host",
        "allow": ["/graph/"],
        "max_pages": 50,
        "depth": 1,
        "parent": root,
        "crawl": root,
        # Learned from a page no intranet task fetched: it must be public (address guard).
        "trust": "public",
        "learned_from": "link",
    }
    # Rows (and new tasks) keep each URL as linked; the canonical form only dedupes.
    assert _outcomes(layout) == {
        "http://shop.example.com/graph/1": "added",
        "http://SHOP.example.com:80/graph/2": "added",
        "http://shop.example.com/graph/2": "known",
        "http://shop.example.com/graph/3?b=2&a=1": "added",
        "http://other.example.com/graph/4": "out_of_scope",
        "ftp://shop.example.com/graph/5": "out_of_scope",
        "http://shop.example.com/about": "out_of_scope",
    }
    rows = frontier(layout)
    assert {(r["crawl"], r["parent"], r["depth"]) for r in rows} == {(root, root, 1)}
    assert {r["child"] for r in rows if r["url"].endswith("/graph/1")} == {child}
    third = request_key("http://shop.example.com/graph/3?a=1&b=2")
    assert params_of(layout, third)["url"] == "http://shop.example.com/graph/3?b=2&a=1"


def test_domain_scope_keeps_the_registered_domain(layout: DataLayout) -> None:
    root = seed(layout, "http://www.example.co.uk/", max_depth=1, scope="domain")
    parsed(
        layout,
        root,
        [
            "http://shop.example.co.uk/a",  # same registered domain
            "http://example.co.uk/b",
            "http://other.co.uk/c",  # co.uk is a public suffix: another domain
            "http://example.com/d",
        ],
    )
    run_discovery(layout, [root])
    assert _outcomes(layout) == {
        "http://shop.example.co.uk/a": "added",
        "http://example.co.uk/b": "added",
        "http://other.co.uk/c": "out_of_scope",
        "http://example.com/d": "out_of_scope",
    }


def test_deny_patterns_depth_and_known_links(layout: DataLayout) -> None:
    root = seed(layout, SEED, max_depth=1, deny=[r"/private/"])
    parsed(
        layout,
        root,
        [SEED, "http://shop.example.com/private/1", "http://shop.example.com/graph/1"],
    )
    first = run_discovery(layout, [root])
    assert first.outcomes == {"known": 1, "denied": 1, "added": 1}
    child = first.keys[0]
    parsed(layout, child, [SEED, "http://shop.example.com/graph/4"])  # depth 2 > max_depth 1
    second = run_discovery(layout, [child])
    assert second.keys == []
    outcomes = {(r["parent"], r["url"]): r["outcome"] for r in frontier(layout)}
    assert outcomes[(child, "http://shop.example.com/graph/4")] == "too_deep"
    assert outcomes[(child, SEED)] == "known"


def test_a_link_known_under_a_hand_given_key_is_not_added_again(layout: DataLayout) -> None:
    seed(layout, "http://shop.example.com/graph/7", key="my-own-key")
    root = seed(layout, SEED, max_depth=3)
    parsed(layout, root, ["http://shop.example.com/graph/7#top"])
    found = run_discovery(layout, [root])
    assert found.keys == [] and found.outcomes == {"known": 1}
    assert len(known_fingerprints(layout)) == 2  # read from the hand key's params, then cached


def test_the_budget_counts_the_seed_and_every_task_added(layout: DataLayout) -> None:
    root = seed(layout, SEED, max_depth=5, max_pages=3)
    parsed(layout, root, [f"http://shop.example.com/graph/{n}" for n in range(1, 4)])
    found = run_discovery(layout, [root])
    assert len(found.keys) == 2
    assert found.outcomes == {"added": 2, "over_budget": 1}
    parsed(layout, found.keys[0], ["http://shop.example.com/graph/9"])
    assert run_discovery(layout, [found.keys[0]]).outcomes == {"over_budget": 1}


def test_pages_not_parsed_and_tasks_outside_any_crawl(layout: DataLayout) -> None:
    plain = seed(layout, "http://shop.example.com/plain")  # max_depth 0: not followed
    parsed(layout, plain, ["http://shop.example.com/x"])
    unparsed = seed(layout, SEED, max_depth=2)
    found = run_discovery(layout, [plain, unparsed])
    assert found.keys == [] and found.parents == 0
    assert expanded_keys(layout) == {plain}  # the unparsed one is left for later
    parsed(layout, unparsed, ["http://shop.example.com/y"])
    assert len(run_discovery(layout, [plain, unparsed]).keys) == 1


def test_running_again_adds_nothing_and_records_no_row_twice(layout: DataLayout) -> None:
    root = seed(layout, SEED, max_depth=2)
    parsed(layout, root, [f"http://shop.example.com/graph/{n}" for n in range(1, 4)])
    first = run_discovery(layout, [root])
    tasks = sorted(p.name for p in iter_status_files(layout.status_dir))
    rows = frontier(layout)
    again = run_discovery(layout, [root])
    assert again.batch is None and again.keys == []
    assert sorted(p.name for p in iter_status_files(layout.status_dir)) == tasks
    assert frontier(layout) == rows
    assert [b.keys for b in pending_batches(layout)] == [first.keys]


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


def test_discoveries_sharing_a_memo_see_what_changed_in_the_folder_between_them(
    layout: DataLayout,
) -> None:
    memo = DiscoveryMemo()  # as a crawl streamed through one run keeps one

    def discover_with_memo(keys: list[str]) -> Discovery:
        with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
            return discover(layout, keys, ledger=ledger, memo=memo)

    root = seed(layout, SEED, max_depth=3)
    parsed(layout, root, ["http://shop.example.com/graph/1"])
    [child] = discover_with_memo([root]).keys
    # Another process stores a task under a hand-given key between two discoveries.
    seed(layout, "http://shop.example.com/graph/7", key="my-own-key")
    parsed(layout, child, ["http://shop.example.com/graph/7", "http://shop.example.com/graph/8"])
    second = discover_with_memo([child])
    assert second.outcomes == {"known": 1, "added": 1}
    # A task removed since is no longer known: a link to it becomes a task again.
    (layout.status_dir / f"my-own-key{STATUS_SUFFIX}").unlink()
    [grandchild] = second.keys
    parsed(layout, grandchild, ["http://shop.example.com/graph/7"])
    assert discover_with_memo([grandchild]).outcomes == {"added": 1}


def test_a_memo_reads_the_journal_as_it_grows_and_agrees_with_a_fresh_read(
    layout: DataLayout,
) -> None:
    memo = DiscoveryMemo()  # a crawl streamed through one run
    root = seed(layout, SEED, max_depth=3, max_pages=4)
    parsed(layout, root, ["http://shop.example.com/graph/1"])
    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        [child] = discover(layout, [root], ledger=ledger, memo=memo).keys
    # Another process's discovery (no memo of its own) adds to both files in between.
    parsed(layout, child, ["http://shop.example.com/graph/2"])
    [grandchild] = run_discovery(layout, [child]).keys
    assert memo.expanded_keys(layout) == expanded_keys(layout) == {root, child}
    assert memo.crawl_sizes(layout) == crawl_sizes(layout) == {params_of(layout, child)["crawl"]: 2}
    # The budget (4 with the seed) counts what the other process added: one more, not two.
    parsed(
        layout, grandchild, ["http://shop.example.com/graph/3", "http://shop.example.com/graph/4"]
    )
    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        third = discover(layout, [grandchild], ledger=ledger, memo=memo)
    assert third.outcomes == {"added": 1, "over_budget": 1}, third.outcomes
    assert memo.expanded_keys(layout) == expanded_keys(layout) == {root, child, grandchild}


def test_a_journal_tail_reads_whole_new_lines_and_starts_over_on_a_new_file(
    layout: DataLayout,
) -> None:
    tail = JournalTail("expanded.txt")
    path = frontier_dir(layout) / "expanded.txt"
    with frontier_lock(layout):  # names the status folder the frontier's files belong to
        pass
    assert tail.read(layout) == (True, [])  # no file yet
    path.write_bytes(b"a\nb\nc-being-writ")
    assert tail.read(layout) == (True, ["a", "b"])
    assert tail.read(layout) == (False, [])
    with path.open("ab") as stream:
        stream.write(b"ten\nd\n")
    assert tail.read(layout) == (False, ["c-being-written", "d"])
    # Replaced by another file (a new inode), or rewritten in place with another start.
    path.unlink()
    path.write_bytes(b"x\n")
    assert tail.read(layout) == (True, ["x"])
    with path.open("r+b") as stream:
        stream.write(b"y\nz\n")
    assert tail.read(layout) == (True, ["y", "z"])
    # A status folder made anew: the frontier is stale until the next discovery retires it.
    shutil.rmtree(layout.status_dir)
    layout.ensure()
    seed(layout, SEED)
    assert tail.read(layout) == (True, [])


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


def test_links_inherit_the_trust_of_the_page_that_holds_them(layout: DataLayout) -> None:
    """Only a page `scrape` fetched from an internal address for an intranet task hands its
    links the intranet trust; links of any other page (whatever their own URL) must be public.
    """
    intranet = seed(layout, "http://127.0.0.1:9/wiki/", max_depth=1)
    public = seed(layout, "http://127.0.0.1:9/mirror/", max_depth=1)
    status = load_status(layout.status_dir, intranet)
    assert status is not None
    record_success(status, "scrape", {"intranet": True}, ended=utc_now(), attempts=1)
    write_status(layout.status_dir, intranet, status)
    parsed(layout, intranet, ["http://127.0.0.1:9/wiki/a"])
    parsed(layout, public, ["http://127.0.0.1:9/mirror/b"])
    run_discovery(layout, [intranet, public])
    wiki, mirror = (request_key(f"http://127.0.0.1:9/{p}") for p in ("wiki/a", "mirror/b"))
    assert params_of(layout, wiki)["trust"] == "intranet"
    assert params_of(layout, mirror)["trust"] == "public"


def test_links_inherit_the_seeds_revisit_bounds(layout: DataLayout) -> None:
    root = seed(layout, SEED, max_depth=1, revisit_min_seconds="600", revisit_initial_seconds=3600)
    parsed(layout, root, ["http://shop.example.com/graph/1"])
    run_discovery(layout, [root])
    params = params_of(layout, request_key("http://shop.example.com/graph/1"))
    assert (params["revisit_min_seconds"], params["revisit_initial_seconds"]) == (600.0, 3600.0)
    assert "revisit_max_seconds" not in params
