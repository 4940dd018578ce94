"""The inbox sensor's decisions, evaluated with `build_sensor_context` on a real instance,
the runs it requests executed with the same assets, tags and config. The real daemon runs it
in `test_daemon.py`."""

from pathlib import Path
from typing import cast

import dagster as dg
import orjson

from scrapeflow_dagster.defs.automation import RANGE_END_TAG, RANGE_START_TAG
from scrapeflow_dagster.defs.sensors import inbox_sensor
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.status import load_status
from scrapeflow_dagster.engine.tasks.inbox import done_dir, pending_batches
from scrapeflow_dagster.lib.partitions import TASKS_PARTITIONS_NAME
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.defs.conftest import Materialize
from scrapeflow_dagster_tests.defs.sensor_ticks import evaluate, execute
from scrapeflow_dagster_tests.support.partitions import Status, partition_statuses


def write_inbox_csv(layout: DataLayout, site: SiteThread) -> Path:
    lines = [
        "key,url,cookies",
        f"inbox-1,{site.url('/page/1')},",
        f'inbox-2,{site.url("/page/2")},"{{""session"": ""abc""}}"',
        "inbox-file,file:///etc/passwd,",
        f"inbox/slash,{site.url('/page/3')},",
        f"inbox...dots,{site.url('/page/4')},",
        f"inbox-cookies,{site.url('/page/5')},{{not json",
        f"inbox-3,{site.url('/page/6')},",
    ]
    path = layout.inbox_dir / "batch.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_inbox_sensor_adds_valid_tasks_as_partitions_and_requests_their_runs(
    site_thread: SiteThread,
    layout: DataLayout,
    instance: dg.DagsterInstance,
    materialize_range: Materialize,
) -> None:
    write_inbox_csv(layout, site_thread)

    result = evaluate(inbox_sensor, instance, layout)

    assert isinstance(result, dg.SensorResult)
    valid = ["inbox-1", "inbox-2", "inbox-3"]
    # Added through the instance before the file moved, not left to the tick's result.
    assert not result.dynamic_partitions_requests
    assert instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME) == valid
    (run,) = result.run_requests or []
    assert run.asset_selection == [dg.AssetKey(a) for a in ("scrape", "validation", "pages")]
    assert (run.tags[RANGE_START_TAG], run.tags[RANGE_END_TAG]) == ("inbox-1", "inbox-3")

    assert not list(layout.inbox_dir.glob("*.csv"))
    (moved,) = done_dir(layout).glob("*-batch.csv")
    errors = moved.with_name(moved.name + ".errors.txt").read_text().splitlines()
    assert [line.split(":")[1] for line in errors] == ["4", "5", "6", "7"]
    assert "file:///etc/passwd" in errors[0]
    assert "'/'" in errors[1] and "'..'" in errors[2]
    assert "cookies is not valid JSON" in errors[3]
    status = load_status(layout.status_dir, "inbox-2")
    assert status is not None and status["params"]["cookies"] == {"session": "abc"}
    for bad in ("inbox-file", "inbox-cookies"):
        assert load_status(layout.status_dir, bad) is None

    # Until a run exists for it, the batch asks again, under the same run key.
    again = evaluate(inbox_sensor, instance, layout)
    assert isinstance(again, dg.SensorResult)
    assert [r.run_key for r in again.run_requests or []] == [run.run_key]

    assert execute(materialize_range, run).success
    for asset in ("scrape", "validation", "pages"):
        assert partition_statuses(instance, asset, valid) == dict.fromkeys(
            valid, Status.MATERIALIZED
        )


def test_inbox_sensor_skips_an_empty_inbox(
    layout: DataLayout, instance: dg.DagsterInstance
) -> None:
    (layout.inbox_dir / "notes.md").write_text("not a task file\n")

    result = evaluate(inbox_sensor, instance, layout)

    assert isinstance(result, dg.SkipReason)
    assert str(layout.inbox_dir) in (result.skip_message or "")
    assert (layout.inbox_dir / "notes.md").exists()


def test_the_same_file_dropped_twice_asks_for_the_same_runs_and_keeps_both_files(
    site_thread: SiteThread, layout: DataLayout, instance: dg.DagsterInstance
) -> None:
    write_inbox_csv(layout, site_thread)
    first = evaluate(inbox_sensor, instance, layout)
    assert isinstance(first, dg.SensorResult)
    write_inbox_csv(layout, site_thread)  # the same file dropped again

    again = evaluate(inbox_sensor, instance, layout)

    assert isinstance(again, dg.SensorResult)
    assert [r.run_key for r in again.run_requests or []] == [
        r.run_key for r in first.run_requests or []
    ]
    assert instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME) == [
        "inbox-1",
        "inbox-2",
        "inbox-3",
    ]
    moved = sorted(done_dir(layout).glob("*batch*.csv"))
    assert len(moved) == 2, "the second file must not overwrite the first"
    assert all(m.with_name(m.name + ".errors.txt").exists() for m in moved)


def test_a_file_of_tasks_already_materialised_asks_for_no_run(
    site_thread: SiteThread,
    layout: DataLayout,
    instance: dg.DagsterInstance,
    materialize_range: Materialize,
) -> None:
    write_inbox_csv(layout, site_thread)
    (run,) = cast(dg.SensorResult, evaluate(inbox_sensor, instance, layout)).run_requests or []
    assert execute(materialize_range, run).success
    path = layout.inbox_dir / "again.csv"
    path.write_text(f"key,url\ninbox-1,{site_thread.url('/page/1')}\n")

    result = evaluate(inbox_sensor, instance, layout)

    # The first batch still waits for a run tagged with its run key (the daemon's tag).
    assert isinstance(result, dg.SensorResult)
    assert [r.run_key for r in result.run_requests or []] == [run.run_key]
    assert [b.source for b in pending_batches(layout)] == ["batch.csv"]
    (finished,) = done_dir(layout).glob("*-again.csv.batch.json")
    assert orjson.loads(finished.read_bytes())["ranges"] == []
    assert not path.exists()


def test_a_tick_that_took_only_refused_lines_says_so_in_its_skip_reason(
    layout: DataLayout, instance: dg.DagsterInstance
) -> None:
    (layout.inbox_dir / "bad.csv").write_text("key,url\nbad-1,ftp://example.com/x\n")

    result = evaluate(inbox_sensor, instance, layout)

    assert isinstance(result, dg.SkipReason)
    assert result.skip_message is not None
    assert "bad.csv: 0 tasks (0 new), 1 refused, 0 runs" in result.skip_message
    assert "no task files" not in result.skip_message
