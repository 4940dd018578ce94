"""Retention applied by the real daemon, as users get it: a home with a `retention:` block, the
shipped chain run twice through the real `dagster asset materialize` (the second a forced
refresh), then `dagster sensor start retention_sensor` and `dagster-daemon run -w
workspace.yaml`. The daemon's ticks delete every superseded asset event and, on Postgres,
rebuild the indexes that deleted planned rows bloated, one a tick; every read (states,
failures, the status cache, the UI's answers, the kept history) is as before."""

from pathlib import Path

import pytest
import sqlalchemy as db

from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster.storage.retention.postgres_reindex import (
    PRUNED_TABLES,
    bloated,
    index_sizes,
)
from scrapeflow_dagster.storage.retention.prune import RetentionPolicy
from scrapeflow_dagster_tests.defs.test_daemon import Daemon
from scrapeflow_dagster_tests.storage.homes import instance_of, require_postgres_extra
from scrapeflow_dagster_tests.storage.retention_homes import (
    ASSETS,
    ChainHome,
    histories,
    leave_deleted_planned_rows,
    reads,
    task_rows,
    write_chain_home,
)
from scrapeflow_dagster_tests.support.postgres import (  # noqa: F401 (the postgres fixture)
    PostgresServer,
    postgres,
)

TASKS = 30
COPIES = 1500  # ~10,000 planned rows inserted and deleted: what a large run leaves
# Rows left for the daemon: with `at_write` a Postgres run's writes would delete the rows they
# supersede themselves (`test_retention` covers that).
POLICY = RetentionPolicy(superseded_grace_seconds=0, run_logs_keep_days=None, at_write=False)
SENSOR = "retention_sensor"


def _tick_messages(home: Path) -> list[str]:
    """The skip messages of the retention sensor's ticks so far, oldest first."""
    with instance_of(home) as instance:
        states = [s for s in instance.all_instigator_state() if s.name == SENSOR]
        if not states:
            return []
        (state,) = states
        ticks = instance.get_ticks(state.instigator_origin_id, state.selector_id)
        failures = [t.error for t in ticks if t.error is not None]
        assert not failures, failures
        return [t.skip_reason or "" for t in reversed(ticks)]


def _pruned(home: Path) -> bool:
    return any(message.startswith("deleted ") for message in _tick_messages(home))


def _rebuilt(home: Path) -> set[str]:
    """The indexes the ticks so far rebuilt (one a tick at most)."""
    found: set[str] = set()
    for message in _tick_messages(home):
        if "indexes rebuilt: " in message:
            found.update(message.split("indexes rebuilt: ", 1)[1].split(";")[0].split(", "))
    return found


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_daemon_prunes_superseded_events_and_changes_no_read(
    backend: str, site_thread: SiteThread, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = None
    if backend == "postgres":
        require_postgres_extra()
        server: PostgresServer = request.getfixturevalue("postgres")
        url = server.database("retention_daemon")
    home = write_chain_home(tmp_path / "home", policy=POLICY, postgres_url=url)
    chain = ChainHome(home, tmp_path / "data", task_rows(site_thread, TASKS, tag=f"{backend}-"))
    chain.run(forced=False, cwd=tmp_path)
    chain.run(forced=True, cwd=tmp_path)
    bloated_before: set[str] = set()
    if url is not None:
        engine = db.create_engine(url, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            leave_deleted_planned_rows(conn, COPIES)
            conn.execute(db.text("VACUUM (ANALYZE) event_logs"))
            bloated_before = {size.name for size in bloated(index_sizes(conn, "event_logs"))}
        assert bloated_before
    reads(home, chain.keys)  # the status cache stored, as after any UI visit
    before = reads(home, chain.keys)
    history_before = histories(home)

    daemon = Daemon(home, chain.layout, tmp_path / "daemon.log")
    try:
        daemon.cli("sensor", "start", SENSOR)
        daemon.start()
        daemon.wait_until(lambda: _pruned(home), "a retention tick that pruned")
        # A tick rebuilds one bloated index, so that none outlasts Dagster's evaluation limit.
        daemon.wait_until(lambda: bloated_before <= _rebuilt(home), "every index rebuilt")
    finally:
        daemon.stop()

    message = next(m for m in _tick_messages(home) if m.startswith("deleted "))
    assert "ASSET_MATERIALIZATION" in message and "ASSET_MATERIALIZATION_PLANNED" in message
    assert reads(home, chain.keys) == before
    history_after = histories(home)
    for asset in ASSETS:
        kept = history_after[asset]
        # The second run superseded every materialisation of the first.
        assert kept and set(kept) < set(history_before[asset]), asset
        assert all(history_before[asset][event_id] == event for event_id, event in kept.items())
        assert len(kept) == len({(kind, partition) for kind, _, partition, _ in kept.values()})
    if url is not None:
        assert len(bloated_before) > 1 and "indexes rebuilt: " in message, message
        assert message.split("indexes rebuilt: ", 1)[1].split(";")[0].count(",") == 0, message
        with engine.connect() as conn:
            for table in PRUNED_TABLES:
                assert bloated(index_sizes(conn, table)) == [], table
        engine.dispose()
