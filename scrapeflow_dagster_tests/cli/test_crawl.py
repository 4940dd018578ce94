"""`scrapeflow crawl` through the real CLI against the bundled site's link graph: exactly the
pages within the depth, each once, never a disallowed path, all parsed; killed half-way and run
again, no completed page is fetched again; `scrapeflow refresh` asks every page again
conditionally, gets 304s and keeps every body."""

import contextlib
import json
import subprocess
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pytest

from scrapeflow_dagster.engine.crawl.frontier.batches import FrontierBatch
from scrapeflow_dagster.engine.crawl.frontier.journal import frontier_dir
from scrapeflow_dagster.engine.history.recording.spool import spool_files
from scrapeflow_dagster.engine.state.files import load_status
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.schema import is_success, md5_of
from scrapeflow_dagster.engine.tasks.keys import request_key
from scrapeflow_dagster.lib.partitions import tasks_partitions_def
from scrapeflow_dagster.site.crawling.graph import nodes_within_depth
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.cli.helpers import Run
from scrapeflow_dagster_tests.support.paths import BIN_DIR
from scrapeflow_dagster_tests.support.processes import kill_group, process_env, wait_until

DEPTH = 3


@pytest.fixture
def graph_site() -> Iterator[SiteThread]:
    """The bundled site; graph pages answer after 0.5 s, so a kill lands mid-round."""
    with SiteThread(pages=10, graph_delay_seconds=0.5) as running:
        yield running


def _requests(site: SiteThread) -> dict[str, Any]:
    with urllib.request.urlopen(site.url("/control/requests"), timeout=10) as response:
        data: dict[str, Any] = json.load(response)
    return data


def _graph_counts(site: SiteThread) -> dict[str, int]:
    return {p: n for p, n in _requests(site)["paths"].items() if p.startswith("/graph/")}


def _expected(site: SiteThread) -> dict[str, str]:
    """Path -> task key of every page within the depth."""
    return {f"/graph/{n}": request_key(site.url(f"/graph/{n}")) for n in nodes_within_depth(DEPTH)}


def _seeds(site: SiteThread, tmp_path: Path) -> str:
    path = tmp_path / "seeds.txt"
    path.write_text(site.url("/graph/0") + "\n")
    return str(path)


@contextlib.contextmanager
def _crawl_process(
    seeds: str, dagster_home: Path, layout: DataLayout, tmp_path: Path
) -> Iterator[tuple["subprocess.Popen[bytes]", Path]]:
    """`scrapeflow crawl` of `seeds` to `DEPTH` in its own process group, its output in
    `crawl-1.log`; the group is killed when the block ends."""
    log_path = tmp_path / "crawl-1.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(BIN_DIR / "scrapeflow"), "crawl", seeds, "--max-depth", str(DEPTH)],
            cwd=tmp_path,
            env=process_env(dagster_home, layout.root),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            yield process, log_path
        finally:
            kill_group(process)


def _assert_all_parsed(
    layout: DataLayout, cli_instance: Callable[[], dg.DagsterInstance], keys: list[str]
) -> None:
    statuses = cli_instance().get_status_by_partition(
        dg.AssetKey("pages"), keys, tasks_partitions_def
    )
    assert statuses is not None
    assert {k: statuses.get(k) for k in keys} == dict.fromkeys(
        keys, dg.AssetPartitionStatus.MATERIALIZED
    )
    for key in keys:
        status = load_status(layout.status_dir, key)
        assert status is not None and is_success(status, "pages"), key


def test_a_crawl_fetches_the_pages_within_its_depth_once_then_refreshes_with_304s(
    graph_site: SiteThread,
    run_command: Run,
    layout: DataLayout,
    cli_instance: Callable[[], dg.DagsterInstance],
    tmp_path: Path,
) -> None:
    crawled = run_command(
        "scrapeflow", "crawl", _seeds(graph_site, tmp_path), "--max-depth", str(DEPTH),
        timeout_seconds=900,
    )  # fmt: skip
    assert crawled.returncode == 0, crawled.stdout + crawled.stderr
    rounds = [line for line in crawled.stdout.splitlines() if line.startswith("round ")]
    assert len(rounds) == DEPTH + 1, crawled.stdout
    expected = _expected(graph_site)
    assert len(expected) == 40
    # Exactly the pages within depth 3, each once; nothing private (robots.txt) or deeper.
    assert _graph_counts(graph_site) == dict.fromkeys(expected, 1)
    # Politeness by default: never more than 8 requests in flight at the host (server side).
    in_flight = _requests(graph_site)["max_in_flight"]
    assert in_flight and max(in_flight.values()) <= 8, in_flight
    _assert_all_parsed(layout, cli_instance, list(expected.values()))
    conn = duckdb.connect(str(layout.db_path), read_only=True)
    try:
        added = conn.execute(
            "SELECT count(*) FILTER (outcome = 'added'), max(depth) FILTER (outcome = 'added') "
            "FROM frontier WHERE url NOT LIKE '%/private/%'"
        ).fetchone()
        private = conn.execute(
            "SELECT DISTINCT outcome FROM frontier WHERE url LIKE '%/private/%' AND depth <= ?",
            [DEPTH],
        ).fetchall()
        in_duckdb = {key for (key,) in conn.execute("SELECT key FROM tasks").fetchall()}
    finally:
        conn.close()
    assert added == (39, DEPTH)  # every page but the seed, added once, none deeper
    # Every task reached DuckDB as the crawl ended, the seed too (storing it synced nothing:
    # the run's sync took its row), and no spool file is left.
    assert set(expected.values()) <= in_duckdb
    assert spool_files(layout.spool_dir) == []
    # The first round's run cached robots.txt: discovery never made private links tasks.
    assert private == [("disallowed",)]

    md5s = {
        key: md5_of(load_status(layout.status_dir, key) or {}, "scrape")
        for key in expected.values()
    }
    parsed_at = {
        key: (load_status(layout.status_dir, key) or {})["pages_last_run"]
        for key in expected.values()
    }
    # Nothing is a week old yet; then everything older than no time at all is.
    fresh = run_command("scrapeflow", "refresh")
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    assert fresh.stdout.startswith("nothing to refresh: no stale task"), fresh.stdout
    refreshed = run_command("scrapeflow", "refresh", "--older-than", "0", timeout_seconds=600)
    assert refreshed.returncode == 0, refreshed.stdout + refreshed.stderr
    assert refreshed.stdout.startswith(f"refresh: {len(expected)} tasks fetched longer ago")
    statuses = _requests(graph_site)["statuses"]
    assert {p: statuses[p] for p in expected} == dict.fromkeys(expected, {"200": 1, "304": 1}), (
        refreshed.stdout + refreshed.stderr
    )
    for key, md5 in md5s.items():
        status = load_status(layout.status_dir, key) or {}
        assert md5 is not None and md5_of(status, "scrape") == md5, key
        assert status["scrape"]["not_modified"] is True, key
        # The steps after the fetch ran again on it, in the same run.
        assert status["pages_last_run"] > parsed_at[key], key


def test_a_killed_crawl_run_again_fetches_no_completed_page_again(
    graph_site: SiteThread,
    dagster_home: Path,
    layout: DataLayout,
    run_command: Run,
    cli_instance: Callable[[], dg.DagsterInstance],
    tmp_path: Path,
) -> None:
    seeds = _seeds(graph_site, tmp_path)
    with _crawl_process(seeds, dagster_home, layout, tmp_path) as (first, log_path):
        # Round 3 fetches the 27 pages at depth 3, 8 at a time: kill once it is well under way.
        wait_until(
            lambda: len(_graph_counts(graph_site)) >= 24,
            what="the crawl's third round",
            timeout_seconds=600,
            poll_seconds=0.05,
            process=first,
            log_tail=lambda: log_path.read_text()[-3000:],
        )
    expected = _expected(graph_site)
    completed = [
        path
        for path, key in expected.items()
        if is_success(load_status(layout.status_dir, key) or {}, "scrape")
    ]
    assert 13 <= len(completed) < 40  # killed half-way: depths 0-2 done, depth 3 not all

    again = run_command(
        "scrapeflow", "crawl", seeds, "--max-depth", str(DEPTH), timeout_seconds=900
    )
    assert again.returncode == 0, again.stdout + again.stderr
    counts = _graph_counts(graph_site)
    assert set(counts) == set(expected)  # nothing private, nothing deeper
    assert {p: counts[p] for p in completed} == dict.fromkeys(completed, 1)
    # Pages in flight when it was killed may be fetched again; no page more than that.
    assert max(counts.values()) <= 2, counts
    _assert_all_parsed(layout, cli_instance, list(expected.values()))


def test_a_crawl_run_stopped_by_a_discovery_error_hands_its_tasks_back(
    graph_site: SiteThread,
    dagster_home: Path,
    layout: DataLayout,
    run_command: Run,
    cli_instance: Callable[[], dg.DagsterInstance],
    tmp_path: Path,
) -> None:
    seeds = _seeds(graph_site, tmp_path)
    corrupt = frontier_dir(layout) / "batches" / "99999999999999999999-0.json"
    with _crawl_process(seeds, dagster_home, layout, tmp_path) as (first, log_path):
        # Depth 1 is being fetched: a frontier batch no discovery can read stops the run's
        # next discovery, and so its pass.
        wait_until(
            lambda: len(_graph_counts(graph_site)) >= 3,
            what="the crawl's depth 1",
            timeout_seconds=600,
            poll_seconds=0.05,
            process=first,
        )
        corrupt.write_text("{not a batch")
        assert first.wait(timeout=600) != 0
    output = log_path.read_text()
    assert f"{corrupt} is not a frontier batch" in output, output[-3000:]
    # The run's discovered tasks it did not run are handed back to every driver.
    handed_back = pending_batches_readable(layout, corrupt)
    assert handed_back and all(batch.streamed_by is None for batch in handed_back)
    fetched_before = _graph_counts(graph_site)

    corrupt.unlink()
    again = run_command(
        "scrapeflow", "crawl", seeds, "--max-depth", str(DEPTH), timeout_seconds=900
    )
    assert again.returncode == 0, again.stdout + again.stderr
    expected = _expected(graph_site)
    counts = _graph_counts(graph_site)
    assert set(counts) == set(expected)  # every page within the depth, nothing more
    # A page fetched by the stopped run is not fetched again (the one in flight may be).
    again_fetched = [p for p in fetched_before if counts[p] > fetched_before[p]]
    assert len(again_fetched) <= 8, again_fetched
    _assert_all_parsed(layout, cli_instance, list(expected.values()))
    assert not list((frontier_dir(layout) / "batches").glob("*.json"))  # all finished


def pending_batches_readable(layout: DataLayout, unreadable: Path) -> list[FrontierBatch]:
    """The frontier's batches but `unreadable`."""
    folder = frontier_dir(layout) / "batches"
    return [
        FrontierBatch.from_bytes(path.read_bytes(), path)
        for path in sorted(folder.glob("*.json"))
        if path != unreadable
    ]


def test_crawl_options_are_checked_before_anything_runs(run_command: Run, tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://127.0.0.1:9/graph/0\n")
    for args, reason in [
        (["--max-depth", "-1"], "--max-depth must be a whole number >= 0, got -1"),
        (["--max-depth", "2", "--deny", "(["], "--deny pattern '([' is not a valid regex"),
        (["--max-depth", "2", "--max-pages", "0"], "--max-pages must be a whole number >= 1"),
    ]:
        done = run_command("scrapeflow", "crawl", str(seeds), *args)
        assert done.returncode == 2 and reason in done.stderr, done.stderr
    missing = run_command("scrapeflow", "crawl", str(seeds))
    assert missing.returncode == 2 and "--max-depth" in missing.stderr


def test_tasks_add_takes_crawl_options_for_lines_without_their_own(
    run_command: Run, layout: DataLayout, tmp_path: Path
) -> None:
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text(
        '{"url": "http://127.0.0.1:9/a"}\n{"url": "http://127.0.0.1:9/b", "max_depth": 1}\n'
    )
    done = run_command(
        "scrapeflow", "tasks", "add", str(seeds), "--max-depth", "3", "--scope", "domain"
    )
    assert done.returncode == 0, done.stderr
    params = {
        url: (load_status(layout.status_dir, request_key(url)) or {})["params"]
        for url in ("http://127.0.0.1:9/a", "http://127.0.0.1:9/b")
    }
    assert params == {
        "http://127.0.0.1:9/a": {"url": "http://127.0.0.1:9/a", "max_depth": 3, "scope": "domain"},
        "http://127.0.0.1:9/b": {"url": "http://127.0.0.1:9/b", "max_depth": 1, "scope": "domain"},
    }


def test_a_stored_task_seeded_takes_the_crawl_settings_and_a_changed_request_is_refused(
    run_command: Run, layout: DataLayout, tmp_path: Path
) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://127.0.0.1:9/graph/0\n")  # nothing listens there: no page
    stored = run_command("scrapeflow", "tasks", "add", str(seeds))  # a plain task, depth 0
    assert stored.returncode == 0, stored.stderr

    seeded = run_command("scrapeflow", "crawl", str(seeds), "--max-depth", "2")

    assert seeded.returncode == 0, seeded.stdout + seeded.stderr
    assert "grown in place: 1 seed took new crawl settings" in seeded.stdout
    (key,) = [p.name.removesuffix(".status.json") for p in layout.status_dir.glob("*.status.json")]
    status = load_status(layout.status_dir, key)
    assert status is not None and status["params"]["max_depth"] == 2

    # Another request under the same key (other headers) is never taken: said, by field.
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"url": "http://127.0.0.1:9/graph/0", "headers": {"A": "1"}}))
    done = run_command("scrapeflow", "crawl", str(other), "--max-depth", "2")

    assert done.returncode == 2, done.stdout + done.stderr
    assert f"refused: {other}:1: task key" in done.stderr
    assert "(headers differ" in done.stderr and "give this one another key" in done.stderr
    assert "every seed line was refused (1, see above)" in done.stderr
    assert "keeps its request" in done.stderr
    assert "refused" not in done.stdout


def test_a_crawl_deepened_in_place_fetches_only_the_new_pages(
    run_command: Run, layout: DataLayout, tmp_path: Path
) -> None:
    with SiteThread(pages=10) as site:
        seeds = _seeds(site, tmp_path)
        shallow = run_command("scrapeflow", "crawl", seeds, "--max-depth", "1")
        assert shallow.returncode == 0, shallow.stdout + shallow.stderr
        assert set(_graph_counts(site)) == {f"/graph/{n}" for n in nodes_within_depth(1)}

        deeper = run_command("scrapeflow", "crawl", seeds, "--max-depth", "2", timeout_seconds=300)

        assert deeper.returncode == 0, deeper.stdout + deeper.stderr
        assert "grown in place: 1 seed took new crawl settings" in deeper.stdout, deeper.stdout
        counts = _graph_counts(site)
    # Every page within depth 2, each fetched once: the depth-1 pages were not asked again.
    assert counts == {f"/graph/{n}": 1 for n in nodes_within_depth(2)}
    with duckdb.connect(str(layout.db_path), read_only=True) as db:
        outcomes = dict(
            db.execute(
                "SELECT outcome, count(*) FROM frontier WHERE depth = 2 GROUP BY ALL"
            ).fetchall()
        )
        depths = dict(
            db.execute("SELECT params->>'max_depth', count(*) FROM tasks GROUP BY ALL").fetchall()
        )
    # The links that were too deep for depth 1 are added now, not left as they were.
    assert outcomes.get("too_deep") is None and outcomes["added"] == 9, outcomes
    assert depths == {"2": len(nodes_within_depth(2))}  # every task of the crawl took it
