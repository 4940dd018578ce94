"""`discover` on real status files and a real DuckDB: scope, patterns, depth, dedupe, budget,
the frontier rows, and what links inherit from their page and seed.

Resuming after a kill and a status folder made anew are in `test_discover_resuming.py`; a memo
shared by discoveries in `test_discovery_memo.py`."""

from scrapeflow_dagster.engine.crawl import known_fingerprints, pending_batches
from scrapeflow_dagster.engine.crawl.frontier.expanded_and_added import expanded_keys
from scrapeflow_dagster.engine.state.files import iter_status_files, load_status, write_status
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.schema import record_success, utc_now
from scrapeflow_dagster.engine.tasks.keys import request_key
from scrapeflow_dagster_tests.engine.crawl.conftest import SEED
from scrapeflow_dagster_tests.engine.crawl.helpers import (
    frontier,
    params_of,
    parsed,
    run_discovery,
    seed,
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
