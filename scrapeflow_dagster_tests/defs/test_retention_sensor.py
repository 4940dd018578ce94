"""The retention sensor on a home the shipped chain ran in twice (the real CLI over the bundled
site): a first tick prunes every partition and sets its cursor, a later one has nothing left;
a home without a `retention:` block is skipped, and the sensor starts stopped there."""

from pathlib import Path

import dagster as dg
import pytest

from scrapeflow_dagster.defs.sensors.retention import (
    NO_RETENTION,
    build_retention_sensor,
    home_has_retention,
)
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster.storage.retention.prune import RetentionPolicy
from scrapeflow_dagster_tests.storage.homes import instance_of
from scrapeflow_dagster_tests.storage.retention_homes import (
    ChainHome,
    reads,
    task_rows,
    write_chain_home,
)


def _tick(home: Path, cursor: str | None) -> tuple[str, str | None]:
    sensor = build_retention_sensor()
    with instance_of(home) as instance:
        context = dg.build_sensor_context(instance=instance, cursor=cursor)
        result = sensor(context)
        assert isinstance(result, dg.SkipReason)
        return str(result.skip_message), context.cursor


def test_the_sensor_prunes_by_cursor_and_says_what_it_deleted(
    site_thread: SiteThread, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = RetentionPolicy(superseded_grace_seconds=0, run_logs_keep_days=None)
    home = write_chain_home(tmp_path / "home", policy=policy)
    chain = ChainHome(home, tmp_path / "data", task_rows(site_thread, 30))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("SCRAPEFLOW_SENSORS_DEFAULT", "running")
    assert home_has_retention()
    assert build_retention_sensor().default_status == dg.DefaultSensorStatus.RUNNING
    chain.run(forced=False, cwd=tmp_path)
    chain.run(forced=True, cwd=tmp_path)
    reads(home, chain.keys)  # the status cache stored, as after any UI visit
    before = reads(home, chain.keys)

    message, cursor = _tick(home, None)

    assert "ASSET_MATERIALIZATION" in message and "ASSET_MATERIALIZATION_PLANNED" in message
    assert cursor is not None and int(cursor) > 0
    assert reads(home, chain.keys) == before
    chain.run(forced=True, cwd=tmp_path)
    message, later = _tick(home, cursor)
    assert "ASSET_MATERIALIZATION " in message.replace(",", " ").replace(";", " ")
    assert later is not None and int(later) > int(cursor)
    message, last = _tick(home, later)
    assert message.startswith("deleted no asset events") and last == later


def test_a_home_without_retention_is_skipped_and_the_sensor_starts_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = write_chain_home(tmp_path / "home")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("SCRAPEFLOW_SENSORS_DEFAULT", "running")
    assert not home_has_retention()
    assert build_retention_sensor().default_status == dg.DefaultSensorStatus.STOPPED
    assert _tick(home, None) == (NO_RETENTION, None)
