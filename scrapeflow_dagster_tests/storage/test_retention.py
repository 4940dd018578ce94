"""Retention (`storage/retention/prune.py`) on homes the shipped chain ran in, through the real
`dagster asset materialize` over tasks on the bundled site (some fail `scrape`, some
`validation`), on SQLite and on Postgres.

These pin what the rules lean on in Dagster: every read of partition state, the status cache
(kept and built again from the rows), the UI's partition health and partition detail, and the
assets' event history must read the same after a prune. A Dagster upgrade that reads rows
another way fails here (`make compat` runs this module).
"""

import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster.storage.batches.lean_writes import STOCK_WRITES, LeanWrites
from scrapeflow_dagster.storage.dagster_internals import version_guard
from scrapeflow_dagster.storage.retention import backends as retention_backends
from scrapeflow_dagster.storage.retention import prune as retention
from scrapeflow_dagster.storage.retention.prune import PruneReport, RetentionPolicy, prune
from scrapeflow_dagster.storage.retention.sql import MATERIALIZATION, OBSERVATION, PLANNED
from scrapeflow_dagster_tests.storage.homes import instance_of, require_postgres_extra
from scrapeflow_dagster_tests.storage.retention_homes import (
    ASSETS,
    ChainHome,
    histories,
    home_bytes,
    reads,
    task_rows,
    turn_to_failures,
    write_chain_home,
)
from scrapeflow_dagster_tests.support.postgres import PostgresServer

TASKS = 60
NOW = RetentionPolicy(superseded_grace_seconds=0, run_logs_keep_days=0)
BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(scope="module")
def site() -> Iterator[SiteThread]:
    with SiteThread(pages=200, page_bytes=2000) as served:
        yield served


def _chain_home(
    tmp_path: Path,
    site: SiteThread,
    backend: str,
    request: pytest.FixtureRequest,
    lean: LeanWrites | None = None,
    policy: RetentionPolicy | None = None,
) -> tuple[ChainHome, str | None]:
    url, tag = None, f"{backend}-{request.node.name[:40]}-"
    if backend == "postgres":
        require_postgres_extra()
        server: PostgresServer = request.getfixturevalue("postgres")
        url = server.database(request.node.name.lower()[-30:].strip("[]-_"))
    home = write_chain_home(
        tmp_path / "home", policy=policy or RetentionPolicy(), postgres_url=url, lean=lean
    )
    return ChainHome(home, tmp_path / "data", task_rows(site, TASKS, tag=tag)), url


def _prune(home: Path, policy: RetentionPolicy = NOW, **options: Any) -> PruneReport:
    with instance_of(home) as instance:
        return prune(instance.event_log_storage, policy, **options)


def _asset_keys_rows(home: Path) -> list[tuple[Any, ...]]:
    import sqlalchemy as db

    with instance_of(home) as instance:
        storage: Any = instance.event_log_storage  # SQLite or Postgres: both have the method
        with storage.index_connection() as conn:
            rows = conn.execute(db.text("SELECT * FROM asset_keys ORDER BY 1"))
            return [tuple(row) for row in rows]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_prune_after_three_runs_with_failures_changes_no_read(
    backend: str,
    site: SiteThread,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Postgres removes run logs for many runs a statement: here one each, to go through them.
    monkeypatch.setattr(retention_backends, "RUNS_PER_STATEMENT", 1)
    # Rows as stock Dagster writes them (a home before lean writes): every kind to prune.
    chain, _ = _chain_home(tmp_path, site, backend, request, lean=STOCK_WRITES)
    chain.run(forced=False, cwd=tmp_path)
    chain.run(forced=True, cwd=tmp_path)
    # Materialised twice, then failed: the old materialisations go, the failure stays.
    turned = turn_to_failures(site, chain.keys, f"{backend}-{request.node.name[:40]}-")
    chain.run(forced=True, cwd=tmp_path)
    reads(chain.home, chain.keys)  # the status cache stored, as after any UI visit
    rebuilt_before = reads(chain.home, chain.keys, rebuild=True)
    before = reads(chain.home, chain.keys)
    history_before = histories(chain.home)
    asset_keys_before = _asset_keys_rows(chain.home)
    assert turned and all(before["scrape"]["states"][key] == "FAILED" for key in turned)
    assert all(before["scrape"]["ui_detail"][key]["failure"] for key in turned)
    assert all(before["scrape"]["ui_detail"][key]["metadata"] for key in turned)

    dry = _prune(chain.home, dry_run=True)
    report = _prune(chain.home)

    assert dry.deleted_by_kind == report.deleted_by_kind
    # Three runs of 60 tasks: two of every three rows of each kind were superseded.
    assert report.deleted_by_kind[MATERIALIZATION] > 100, report
    assert report.deleted_by_kind[PLANNED] > 200, report
    assert report.deleted_by_kind[OBSERVATION] > 0, report
    # Run 1: every event superseded; run 2 still holds the latest `validation` and `pages`
    # materialisations of the tasks that failed `scrape` in run 3.
    assert report.run_logs_removed == 1, report
    assert _asset_keys_rows(chain.home) == asset_keys_before  # the cache is never written
    assert reads(chain.home, chain.keys) == before
    assert reads(chain.home, chain.keys, rebuild=True) == rebuilt_before
    history_after = histories(chain.home)
    for asset in ASSETS:
        kept = history_after[asset]
        assert kept and set(kept) < set(history_before[asset]), asset
        assert all(history_before[asset][event_id] == event for event_id, event in kept.items())
        # At most one materialisation and one observation per partition.
        assert len(kept) == len({(kind, partition) for kind, _, partition, _ in kept.values()})
    again = _prune(chain.home)
    assert again.deleted == 0 and again.run_logs_removed == 0


def _expected_states(keys: list[str]) -> dict[str, dict[str, str | None]]:
    """What the chain leaves: a 404 fails `scrape`, a captcha page fails `validation`."""
    scrape: dict[str, str | None] = {
        k: "FAILED" if "missing" in k else "MATERIALIZED" for k in keys
    }
    validation = {
        k: None if "missing" in k else "FAILED" if "captcha" in k else "MATERIALIZED" for k in keys
    }
    pages = {k: None if "missing" in k or "captcha" in k else "MATERIALIZED" for k in keys}
    return {"scrape": scrape, "validation": validation, "pages": pages}


@pytest.mark.parametrize("grace", [0.0, 3600.0])
def test_a_postgres_refresh_deletes_what_it_supersedes_as_it_writes_when_old_enough(
    grace: float, site: SiteThread, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    policy = RetentionPolicy(superseded_grace_seconds=grace, run_logs_keep_days=None)
    chain, _ = _chain_home(tmp_path, site, "postgres", request, policy=policy)
    chain.run(forced=False, cwd=tmp_path)
    chain.run(forced=True, cwd=tmp_path)
    assert turn_to_failures(site, chain.keys, f"postgres-{request.node.name[:40]}-")
    chain.run(forced=True, cwd=tmp_path)
    reads(chain.home, chain.keys)  # the status cache stored, as after any UI visit
    before = reads(chain.home, chain.keys)

    left = _prune(chain.home, dry_run=True).deleted_by_kind
    report = _prune(chain.home)

    if grace:
        # An hour's grace: the first two runs' rows are minutes old, so every one stays for
        # the prune, as without `at_write`.
        assert left[MATERIALIZATION] > 2 * TASKS and left[OBSERVATION] > 0, left
    else:
        # Each write deleted the rows it superseded: the prune finds none of those kinds.
        assert left[MATERIALIZATION] == 0 and left[OBSERVATION] == 0, left
    assert report.deleted_by_kind == left
    assert reads(chain.home, chain.keys) == before
    for asset, kept in histories(chain.home).items():
        assert len(kept) == len({(kind, partition) for kind, _, partition, _ in kept.values()})
        assert kept, asset


@pytest.mark.parametrize("backend", BACKENDS)
def test_b_a_prune_beside_running_runs_loses_nothing(
    backend: str, site: SiteThread, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # No grace in the home either: on Postgres the runs' writes delete superseded rows too,
    # beside the prunes (neither may wait for the other in a cycle).
    no_grace = RetentionPolicy(superseded_grace_seconds=0, run_logs_keep_days=None)
    chain, _ = _chain_home(tmp_path, site, backend, request, policy=no_grace)
    stop, passes, errors, deleted = threading.Event(), [0], [], [0]

    def pruner() -> None:
        with instance_of(chain.home) as instance:
            while not stop.is_set():
                try:
                    report = prune(instance.event_log_storage, RetentionPolicy(0, None, True))
                    deleted[0] += report.deleted
                    passes[0] += 1
                except Exception as exc:  # any failure is the test's finding
                    errors.append(repr(exc))
                time.sleep(0.05)

    thread = threading.Thread(target=pruner)
    thread.start()
    try:
        for number in range(3):
            chain.run(forced=number > 0, cwd=tmp_path)
    finally:
        stop.set()
        thread.join()
    assert not errors and passes[0] >= 10, (passes, errors[:3])
    assert deleted[0] > 0  # while the runs wrote
    _prune(chain.home)

    found = reads(chain.home, chain.keys)
    expected = _expected_states(chain.keys)
    with instance_of(chain.home) as instance:
        last_run = instance.get_runs(limit=1)[0].run_id
    for asset in ASSETS:
        states = found[asset]["states"]
        assert {k: states.get(k) for k in chain.keys} == expected[asset], asset
        for key, detail in found[asset]["ui_detail"].items():
            if expected[asset][key] == "MATERIALIZED":  # this run's materialisation, no run box
                assert detail["run"] is None and detail["metadata"], (asset, key)
            elif expected[asset][key] == "FAILED":  # the failed run, and why
                assert (detail["run"], detail["run_status"]) == (last_run, "FAILURE"), key
                assert detail["failure"], (asset, key)
    histories_after = histories(chain.home)
    for asset in ASSETS:
        done = [e for e in histories_after[asset].values() if e[1] == last_run]
        assert len(done) == sum(1 for s in expected[asset].values() if s is not None), asset


@pytest.mark.parametrize("backend", BACKENDS)
def test_b_a_pass_cut_into_ticks_goes_on_where_each_stopped_and_deletes_what_one_prune_would(
    backend: str,
    site: SiteThread,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The sensor's ticks on a large home, in small: a budget every slice overruns, so each
    # call does one slice of a few rows and must hand the next call where it stopped.
    chain, _ = _chain_home(tmp_path, site, backend, request, lean=STOCK_WRITES)
    chain.run(forced=False, cwd=tmp_path)
    chain.run(forced=True, cwd=tmp_path)
    reads(chain.home, chain.keys)  # the status cache stored, as after any UI visit
    before = reads(chain.home, chain.keys)
    would = _prune(chain.home, dry_run=True).deleted_by_kind
    monkeypatch.setattr(retention, "ROWS_PER_CHUNK", 7)
    monkeypatch.setattr(retention, "ROWS_PER_SLICE", 20)

    cursor, deleted, calls = 0, Counter[str](), 0
    while True:
        report = _prune(chain.home, budget_seconds=0, after_id=cursor)
        calls += 1
        deleted.update(report.deleted_by_kind)
        if report.complete:
            break
        assert report.horizon_id > cursor, (calls, report)  # no call starts over
        cursor = report.horizon_id
        assert calls < 500, "the pass does not end"

    # Two runs of 60 tasks: hundreds of asset rows, so many slices, each taken once.
    assert calls > 10, calls
    assert deleted == would and deleted[MATERIALIZATION] > 50, (deleted, would)
    assert reads(chain.home, chain.keys) == before
    assert _prune(chain.home).deleted == 0


def _store_bytes(chain: ChainHome, url: str | None) -> int:
    if url is None:
        return home_bytes(chain.home)
    return _prune(chain.home, dry_run=True).bytes_before  # pg_database_size


@pytest.mark.parametrize("backend", BACKENDS)
def test_c_five_forced_refreshes_with_retention_keep_the_home_near_its_size_after_one(
    backend: str, site: SiteThread, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # Stock rows: a 60-task home with lean writes is mostly fixed per-run costs (2.1 MB, of
    # which a run's own bookkeeping ~70 KB), so its ratio measures those; `bench_retention`
    # gives lean homes' at 10,000 tasks (1.13x).
    chain, url = _chain_home(tmp_path, site, backend, request, lean=STOCK_WRITES)
    sizes = []
    for number in range(6):
        chain.run(forced=number > 0, cwd=tmp_path)
        _prune(chain.home)
        sizes.append(_store_bytes(chain, url))
    ratio = sizes[-1] / sizes[0]
    print(f"{backend}: {[size // TASKS for size in sizes]} B/task, 5 refreshes / 1 run {ratio:.2f}")
    if url is None:
        assert ratio <= 1.2, sizes
    else:
        # Postgres reuses freed rows only after VACUUM: a run this small (one batch) is
        # written before the rows it supersedes can be reused (docs/configuration.md).
        assert ratio <= 2.5, sizes


def test_a_new_index_shard_gives_pages_back_and_an_old_one_after_one_vacuum(
    site: SiteThread, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    import sqlite3

    chain, _ = _chain_home(tmp_path, site, "sqlite", request)
    index = chain.home / "history" / "runs" / "index.db"
    with sqlite3.connect(index) as db:
        assert db.execute("PRAGMA auto_vacuum").fetchone() == (2,)  # INCREMENTAL
        db.execute("PRAGMA auto_vacuum = NONE")
        db.execute("VACUUM")  # as a home made before retention
        assert db.execute("PRAGMA auto_vacuum").fetchone() == (0,)
    chain.run(forced=False, cwd=tmp_path)
    chain.run(forced=True, cwd=tmp_path)
    _prune(chain.home, vacuum_full=True)
    with sqlite3.connect(index) as db:
        assert db.execute("PRAGMA auto_vacuum").fetchone() == (2,)
        assert db.execute("PRAGMA freelist_count").fetchone() == (0,)


def test_on_an_unverified_dagster_a_prune_warns_and_deletes_nothing(
    site: SiteThread,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chain, _ = _chain_home(tmp_path, site, "sqlite", request)
    chain.run(forced=False, cwd=tmp_path)
    chain.run(forced=True, cwd=tmp_path)
    before = histories(chain.home)
    monkeypatch.delenv(version_guard.ADMIT_INSTALLED_ENV, raising=False)
    monkeypatch.setitem(version_guard.VERIFIED, "dagster", ("0.0.0",))
    with pytest.warns(RuntimeWarning, match="retention deletes nothing"):
        report = _prune(chain.home)
    assert report.skipped and report.deleted == 0
    assert histories(chain.home) == before
