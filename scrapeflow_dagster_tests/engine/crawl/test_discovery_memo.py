"""A `DiscoveryMemo` shared by the discoveries of one run, and the journal tail it reads with:
what changed in the folder between two discoveries is seen, and agrees with a fresh read."""

import shutil

from scrapeflow_dagster.engine.crawl import Discovery, DiscoveryMemo, discover
from scrapeflow_dagster.engine.crawl.frontier.batches import frontier_lock
from scrapeflow_dagster.engine.crawl.frontier.expanded_and_added import (
    JournalTail,
    crawl_sizes,
    expanded_keys,
)
from scrapeflow_dagster.engine.crawl.frontier.journal import frontier_dir
from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.schema import STATUS_SUFFIX
from scrapeflow_dagster_tests.engine.crawl.conftest import SEED
from scrapeflow_dagster_tests.engine.crawl.helpers import params_of, parsed, run_discovery, seed


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
