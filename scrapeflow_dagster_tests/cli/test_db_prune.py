"""`scrapeflow db prune --older-than DURATION` as a real process on a real DuckDB file: the
step history older than that goes, each task's current state stays as it was, and the next
writer catches up from there instead of ranking the whole history again."""

from pathlib import Path

import dagster as dg

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.cli.helpers import Run
from scrapeflow_dagster_tests.support.ledger import query
from scrapeflow_dagster_tests.support.partitions import range_tags
from scrapeflow_dagster_tests.support.runs import run_assets, run_resources
from scrapeflow_dagster_tests.support.tasks import TaskRows, store_and_add

CURRENT = "SELECT key, executor, status, md5, run_id FROM current_state ORDER BY ALL"
FORCE = {"ops": {"executor_chain": {"config": {"force": True}}}}


def _scrape_runs(layout: DataLayout, rows: TaskRows, runs: int) -> None:
    """`runs` real runs of `scrape` over `rows` in this process, every one after the first
    forced (a refresh): a step row per task and run."""
    with dg.DagsterInstance.ephemeral() as instance:
        keys = store_and_add(layout, instance, rows)
        resources = run_resources(layout.root, max_attempts=1, request_timeout_seconds=5.0)
        tags = range_tags(keys[0], keys[-1])
        for n in range(runs):
            run_assets(instance, resources, ["scrape"], tags, FORCE if n else None)


def _step_rows(db: Path) -> int:
    return int(query(db, "SELECT count(*) FROM step_runs")[0][0])


def test_db_prune_deletes_old_history_and_keeps_the_current_state(
    run_command: Run, site_thread: SiteThread, layout: DataLayout
) -> None:
    rows = [(f"p-{n}", site_thread.url(f"/page/{n}")) for n in range(3)]
    _scrape_runs(layout, rows, 2)
    db = layout.db_path
    current = query(db, CURRENT)
    assert _step_rows(db) == 6 and len(current) == 3

    kept = run_command("scrapeflow", "db", "prune", "--older-than", "30d")
    dry = run_command("scrapeflow", "db", "prune", "--older-than", "0", "--dry-run")
    assert (kept.returncode, dry.returncode) == (0, 0), kept.stderr + dry.stderr
    assert kept.stdout.startswith("deleted 0 step runs, 0 changes"), kept.stdout
    assert dry.stdout.startswith("would delete 3 step runs, 0 changes"), dry.stdout
    assert _step_rows(db) == 6

    pruned = run_command("scrapeflow", "db", "prune", "--older-than", "0")
    assert pruned.returncode == 0, pruned.stderr
    assert pruned.stdout.startswith("deleted 3 step runs, 0 changes"), pruned.stdout
    assert _step_rows(db) == 3
    assert query(db, CURRENT) == current
    # Marked as reflecting what is left: the next writer appends, it does not rebuild.
    assert query(db, "SELECT step_rows FROM step_current_upto") == [(3,)]
    _scrape_runs(layout, rows, 2)  # skipped, then a refresh: appended as before
    assert _step_rows(db) == 6
    after = query(db, CURRENT)
    assert len(after) == 3 and {row[4] for row in after}.isdisjoint({row[4] for row in current})


def test_db_prune_needs_a_duration(run_command: Run, layout: DataLayout) -> None:
    for extra, named in (([], "--older-than DURATION"), (["--older-than", "soon"], "'soon'")):
        done = run_command("scrapeflow", "db", "prune", *extra)
        assert done.returncode == 2 and named in done.stderr, (extra, done.stderr)
