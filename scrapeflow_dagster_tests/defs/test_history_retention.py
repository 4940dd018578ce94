"""`scrape_settings.history_keep_days`: the first run of each day to end in a data folder trims
DuckDB's history older than that, on real runs and a real DuckDB file; the other runs of the
day leave it alone, and each task's current state stays whatever its age."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg

from scrapeflow_dagster.engine.history.database.retention import CLAIM_PREFIX, prune_once_a_day
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.support.ledger import query
from scrapeflow_dagster_tests.support.partitions import range_tags
from scrapeflow_dagster_tests.support.runs import run_assets, run_resources
from scrapeflow_dagster_tests.support.tasks import store_and_add

FORCE = {"ops": {"executor_chain": {"config": {"force": True}}}}
CURRENT = "SELECT key, executor, status, md5, run_id FROM current_state ORDER BY ALL"


def _age_history(db: Path, days: float) -> None:
    """Make every step row as old as `days` (DuckDB's own file, as a past run left it)."""
    import duckdb

    with duckdb.connect(str(db)) as conn:
        conn.execute(f"UPDATE step_runs SET ended_at = ended_at - INTERVAL {int(days)} DAY")


def _step_rows(db: Path) -> int:
    return int(query(db, "SELECT count(*) FROM step_runs")[0][0])


def test_the_first_run_of_the_day_trims_the_history_the_others_do_not(
    site_thread: SiteThread, layout: DataLayout
) -> None:
    rows = [(f"h-{n}", site_thread.url(f"/page/{n}")) for n in range(3)]
    db = layout.db_path
    with dg.DagsterInstance.ephemeral() as instance:
        keys = store_and_add(layout, instance, rows)
        tags = range_tags(keys[0], keys[-1])
        plain = run_resources(layout.root, max_attempts=1, request_timeout_seconds=5.0)
        kept = run_resources(
            layout.root, max_attempts=1, request_timeout_seconds=5.0, history_keep_days=7
        )
        run_assets(instance, plain, ["scrape"], tags)
        run_assets(instance, plain, ["scrape"], tags, FORCE)
        assert _step_rows(db) == 6
        _age_history(db, 30)  # both runs a month ago: the current rows are the second's
        current = query(db, CURRENT)

        run_assets(instance, kept, ["scrape"], tags, FORCE)

        # The month-old rows that are no task's current state went; this run's stayed.
        assert _step_rows(db) == 3
        assert len(query(db, CURRENT)) == 3 and query(db, CURRENT) != current
        claims = sorted(p.name for p in layout.root.glob(f"{CLAIM_PREFIX}*"))
        assert claims == [f"{CLAIM_PREFIX}{datetime.now(UTC).date().isoformat()}"]

        # Later runs of the same day do not prune again.
        _age_history(db, 30)
        run_assets(instance, kept, ["scrape"], tags, FORCE)
        assert _step_rows(db) == 6


def test_the_claim_is_per_day_and_zero_keeps_everything(
    site_thread: SiteThread, layout: DataLayout, tmp_path: Path
) -> None:
    rows = [(f"d-{n}", site_thread.url(f"/page/{n}")) for n in range(2)]
    with dg.DagsterInstance.ephemeral() as instance:
        keys = store_and_add(layout, instance, rows)
        tags = range_tags(keys[0], keys[-1])
        resources = run_resources(layout.root, max_attempts=1, request_timeout_seconds=5.0)
        run_assets(instance, resources, ["scrape"], tags)
        run_assets(instance, resources, ["scrape"], tags, FORCE)
    db = layout.db_path
    _age_history(db, 10)
    today = datetime.now(UTC)

    off = prune_once_a_day(db, layout.root, 0, now=today)
    assert off.pruned is None and _step_rows(db) == 4
    assert not list(layout.root.glob(f"{CLAIM_PREFIX}*"))

    first = prune_once_a_day(db, layout.root, 30, now=today)
    assert first.pruned is not None and first.pruned.step_runs == 0  # none older than 30 days
    again = prune_once_a_day(db, layout.root, 1, now=today)
    assert again.pruned is None and "already pruned today" in again.reason
    assert _step_rows(db) == 4

    tomorrow = prune_once_a_day(db, layout.root, 1, now=today + timedelta(days=1))
    assert tomorrow.pruned is not None and tomorrow.pruned.step_runs == 2
    assert _step_rows(db) == 2
    claims = [p.name for p in layout.root.glob(f"{CLAIM_PREFIX}*")]
    assert claims == [f"{CLAIM_PREFIX}{(today + timedelta(days=1)).date().isoformat()}"]
