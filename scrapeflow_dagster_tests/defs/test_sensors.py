"""The inbox and retry sensors' decisions, evaluated with `build_sensor_context` on a real
instance, the runs they request executed with the same assets, tags and config. The real
daemon runs them in `test_daemon.py`."""

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

import dagster as dg
import orjson
import pytest

from scrapeflow_dagster.defs.automation import RANGE_END_TAG, RANGE_START_TAG
from scrapeflow_dagster.defs.sensors import inbox_sensor, retry_sensor
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.status import load_status
from scrapeflow_dagster.engine.tasks.inbox import done_dir, pending_batches
from scrapeflow_dagster.lib.partitions import TASKS_PARTITIONS_NAME
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.defs.conftest import Materialize
from scrapeflow_dagster_tests.support.partitions import Status, partition_statuses
from scrapeflow_dagster_tests.support.sensors import sensor_context
from scrapeflow_dagster_tests.support.sites import post
from scrapeflow_dagster_tests.support.tasks import TaskRows

MISSING = "missing-x"
FLAKY = "flaky-x"
CAPTCHA = "captcha-x"
GOOD = [f"good-{n}" for n in range(7)]


def evaluate(
    sensor: dg.SensorDefinition, instance: dg.DagsterInstance, layout: DataLayout
) -> dg.SensorResult | dg.SkipReason:
    result = sensor(sensor_context(instance, layout.root))
    assert isinstance(result, dg.SensorResult | dg.SkipReason), result
    return result


def requests_for(result: dg.SensorResult | dg.SkipReason, asset: str) -> list[dg.RunRequest]:
    if isinstance(result, dg.SkipReason):
        return []
    return [r for r in result.run_requests or [] if r.asset_selection == [dg.AssetKey(asset)]]


def covered(instance: dg.DagsterInstance, requests: Sequence[dg.RunRequest]) -> set[str]:
    """The partitions the range run requests span."""
    ordered = instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME)
    keys: set[str] = set()
    for request in requests:
        first = ordered.index(request.tags[RANGE_START_TAG])
        last = ordered.index(request.tags[RANGE_END_TAG])
        assert first <= last, request.tags
        keys.update(ordered[first : last + 1])
    return keys


def execute(materialize_range: Materialize, request: dg.RunRequest) -> dg.ExecuteInProcessResult:
    """Run what a sensor asked for: its assets, tags (the range) and run config."""
    selection = [key.to_user_string() for key in request.asset_selection or []]
    return materialize_range(selection, tags=request.tags, run_config=request.run_config)


# Inbox sensor.


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


# Retry sensor.


@pytest.fixture
def retry_batch(
    site_thread: SiteThread,
    add_task_rows: Callable[[TaskRows], list[str]],
    materialize_range: Materialize,
    monkeypatch: pytest.MonkeyPatch,
) -> list[str]:
    """Seven good pages around a forever-503 task and a 404 task, after one `scrape` run."""
    monkeypatch.setenv("SCRAPEFLOW_RETRY_BACKOFF_SECONDS", "0")
    monkeypatch.delenv("SCRAPEFLOW_RETRY_MAX_FAILED_RUNS", raising=False)
    rows = [(key, site_thread.url(f"/page/{n}")) for n, key in enumerate(GOOD)]
    rows.insert(3, (FLAKY, site_thread.url("/flaky/retry-x?fail=-1")))
    rows.insert(6, (MISSING, site_thread.url("/status/404")))
    keys = add_task_rows(rows)
    assert not materialize_range("scrape", keys[0], keys[-1]).success
    return keys


def test_retry_sensor_retries_transient_failures_until_everything_converges(
    retry_batch: list[str],
    site_thread: SiteThread,
    layout: DataLayout,
    instance: dg.DagsterInstance,
    materialize_range: Materialize,
) -> None:
    found = partition_statuses(instance, "scrape", retry_batch)
    assert (found[FLAKY], found[MISSING]) == (Status.FAILED, Status.FAILED)

    result = evaluate(retry_sensor, instance, layout)

    scrape_runs = requests_for(result, "scrape")
    assert FLAKY in covered(instance, scrape_runs)
    assert MISSING not in covered(instance, scrape_runs)
    assert all(r.tags["scrapeflow/reason"] == "retry" for r in scrape_runs)

    post(site_thread.url("/control/flaky/retry-x?fail=0"))
    for request in scrape_runs:
        assert execute(materialize_range, request).success
    assert partition_statuses(instance, "scrape", [FLAKY]) == {FLAKY: Status.MATERIALIZED}

    # Keep evaluating and running what is asked, as the daemon would, until nothing is due.
    for _ in range(5):
        result = evaluate(retry_sensor, instance, layout)
        if isinstance(result, dg.SkipReason):
            break
        assert MISSING not in covered(instance, requests_for(result, "scrape"))
        for request in result.run_requests or []:
            assert execute(materialize_range, request).success
    assert isinstance(result, dg.SkipReason), "the retry sensor never settled"

    done = [k for k in retry_batch if k != MISSING]
    for asset in ("scrape", "validation", "pages"):
        assert partition_statuses(instance, asset, done) == dict.fromkeys(done, Status.MATERIALIZED)
    assert partition_statuses(instance, "scrape", [MISSING]) == {MISSING: Status.FAILED}
    assert partition_statuses(instance, "validation", [MISSING]) == {MISSING: None}


def test_retry_sensor_evaluations_dedupe_by_run_key(
    retry_batch: list[str], layout: DataLayout, instance: dg.DagsterInstance
) -> None:
    first = evaluate(retry_sensor, instance, layout)
    second = evaluate(retry_sensor, instance, layout)

    assert isinstance(first, dg.SensorResult) and isinstance(second, dg.SensorResult)
    keys = [r.run_key for r in first.run_requests or []]
    assert keys and all(keys)
    assert keys == [r.run_key for r in second.run_requests or []]
    assert len(set(keys)) == len(keys)


def test_retry_sensor_requests_validation_where_scrape_is_materialised(
    retry_batch: list[str], layout: DataLayout, instance: dg.DagsterInstance
) -> None:
    result = evaluate(retry_sensor, instance, layout)

    validation_runs = requests_for(result, "validation")
    assert validation_runs
    assert covered(instance, validation_runs) == set(GOOD)
    assert requests_for(result, "pages") == []


def test_retry_sensor_gives_up_after_max_failed_runs(
    retry_batch: list[str],
    layout: DataLayout,
    instance: dg.DagsterInstance,
    materialize_range: Materialize,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SCRAPEFLOW_RETRY_MAX_FAILED_RUNS", "3")
    retry_keys: list[str | None] = []

    for _ in range(6):
        (run,) = requests_for(evaluate(retry_sensor, instance, layout), "scrape") or [None]
        if run is None:
            break
        assert covered(instance, [run]) == {FLAKY}
        retry_keys.append(run.run_key)
        assert not execute(materialize_range, run).success  # the fault stays on

    # Failed runs 2 and 3 were retries; each needs its own run key, or the daemon, which
    # launches a run key once, would have dropped the second one.
    assert len(retry_keys) == 2
    assert len(set(retry_keys)) == 2
    status = load_status(layout.status_dir, FLAKY)
    assert status is not None and status["scrape_failures"] == 3
    assert partition_statuses(instance, "scrape", [FLAKY]) == {FLAKY: Status.FAILED}


@pytest.mark.parametrize(
    ("variable", "value"),
    [("SCRAPEFLOW_RETRY_MAX_FAILED_RUNS", "1"), ("SCRAPEFLOW_RETRY_BACKOFF_SECONDS", "3600")],
    ids=["one failed run allowed: gives up at once", "backoff not over: waits"],
)
def test_retry_sensor_asks_for_no_scrape_retry(
    retry_batch: list[str],
    layout: DataLayout,
    instance: dg.DagsterInstance,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
) -> None:
    monkeypatch.setenv(variable, value)

    result = evaluate(retry_sensor, instance, layout)

    assert requests_for(result, "scrape") == []


def test_retry_sensor_leaves_validation_of_tasks_without_scrape_alone(
    retry_batch: list[str],
    site_thread: SiteThread,
    add_task_rows: Callable[[TaskRows], list[str]],
    layout: DataLayout,
    instance: dg.DagsterInstance,
    materialize_range: Materialize,
) -> None:
    (captcha,) = add_task_rows([(CAPTCHA, site_thread.url("/captcha"))])
    materialize_range("scrape", captcha, captcha)
    # A validation run where the captcha fails: Dagster marks the whole run's unmaterialised
    # partitions FAILED, including the tasks whose scrape failed and that never ran.
    assert not materialize_range("validation", retry_batch[0], captcha).success

    result = evaluate(retry_sensor, instance, layout)

    validation_due = covered(instance, requests_for(result, "validation"))
    assert MISSING not in validation_due
    assert FLAKY not in validation_due  # its scrape is due first
    assert FLAKY in covered(instance, requests_for(result, "scrape"))


def test_blocked_validation_gets_a_forced_refetch_then_a_new_validation(
    site_thread: SiteThread,
    add_task_rows: Callable[[TaskRows], list[str]],
    materialize_range: Materialize,
    layout: DataLayout,
    instance: dg.DagsterInstance,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A captcha served once: re-reading the stored body would fail forever, so the sensor
    asks `scrape` to fetch again (forced), then validation is due on the new body."""
    from scrapeflow_dagster.site.app import FaultRates, fault_of

    monkeypatch.setenv("SCRAPEFLOW_RETRY_BACKOFF_SECONDS", "0")
    n = next(n for n in range(1000) if fault_of(n, 0, FaultRates()) == "captcha")
    (key,) = add_task_rows([("captcha-once", site_thread.url(f"/mixed/{n}"))])
    assert materialize_range("scrape", key, key).success  # a 200 with a captcha body
    assert not materialize_range("validation", key, key).success

    result = evaluate(retry_sensor, instance, layout)
    (refetch,) = requests_for(result, "scrape")
    assert refetch.tags["scrapeflow/reason"] == "refetch-validation"
    assert refetch.run_config == {"ops": {"executor_chain": {"config": {"force": True}}}}
    assert requests_for(result, "validation") == []
    assert execute(materialize_range, refetch).success

    result = evaluate(retry_sensor, instance, layout)
    (again,) = requests_for(result, "validation")
    assert execute(materialize_range, again).success
    assert partition_statuses(instance, "validation", [key]) == {key: Status.MATERIALIZED}
    status = load_status(layout.status_dir, key)
    assert status is not None and status["validation_status"] == "SUCCESS"


def test_a_task_blocked_again_after_its_refetch_gets_a_second_refetch(
    site_thread: SiteThread,
    add_task_rows: Callable[[TaskRows], list[str]],
    materialize_range: Materialize,
    layout: DataLayout,
    instance: dg.DagsterInstance,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A captcha served every time: each round's refetch is a new run key (the daemon launches
    a run key once: the same one would leave the task stuck, never re-fetched nor capped)."""
    from scrapeflow_dagster.site.app import FaultRates, fault_of

    monkeypatch.setenv("SCRAPEFLOW_RETRY_BACKOFF_SECONDS", "0")
    n = next(n for n in range(1000) if fault_of(n, 0, FaultRates()) == "captcha")
    (key,) = add_task_rows([("captcha-always", site_thread.url(f"/mixed/{n}?sticky=1"))])
    assert materialize_range("scrape", key, key).success
    run_keys = []
    for _ in range(2):
        assert not materialize_range("validation", key, key).success
        (refetch,) = requests_for(evaluate(retry_sensor, instance, layout), "scrape")
        run_keys.append(refetch.run_key)
        assert execute(materialize_range, refetch).success
        (validation,) = requests_for(evaluate(retry_sensor, instance, layout), "validation")
        assert covered(instance, [validation]) == {key}

    assert run_keys[0] != run_keys[1], run_keys


def test_tasks_done_in_a_run_that_failed_before_reporting_them_are_materialised(
    site_thread: SiteThread,
    add_task_rows: Callable[[TaskRows], list[str]],
    materialize_range: Materialize,
    layout: DataLayout,
    instance: dg.DagsterInstance,
) -> None:
    """Their status files say SUCCESS but Dagster says FAILED (the run failed at start, as a
    killed one does at its end): the retry sensor has them materialised, or `validation`
    would wait for them forever."""
    keys = add_task_rows([(f"done-{n}", site_thread.url(f"/page/{n}")) for n in range(3)])
    assert materialize_range("scrape", keys[0], keys[-1]).success
    broken = {"resources": {"proxy_provider": {"config": {"proxy_urls": ["10.0.0.1:3128"]}}}}
    assert not materialize_range("scrape", keys[0], keys[-1], run_config=broken).success
    assert partition_statuses(instance, "scrape", keys) == dict.fromkeys(keys, Status.FAILED)

    (request,) = requests_for(evaluate(retry_sensor, instance, layout), "scrape")
    assert covered(instance, [request]) == set(keys)
    assert execute(materialize_range, request).success

    assert partition_statuses(instance, "scrape", keys) == dict.fromkeys(keys, Status.MATERIALIZED)
    (validation,) = requests_for(evaluate(retry_sensor, instance, layout), "validation")
    assert covered(instance, [validation]) == set(keys)


def test_steps_after_a_refreshed_fetch_run_again_but_not_after_a_skipping_run(
    site_thread: SiteThread,
    add_task_rows: Callable[[TaskRows], list[str]],
    materialize_range: Materialize,
    layout: DataLayout,
    instance: dg.DagsterInstance,
) -> None:
    keys = add_task_rows([(f"fresh-{n}", site_thread.url(f"/page/{n}")) for n in range(4)])
    for asset in ("scrape", "validation", "pages"):
        assert materialize_range(asset, keys[0], keys[-1]).success
    # A run over fresh tasks skips them (and materialises them again): nothing changed.
    assert materialize_range("scrape", keys[0], keys[-1]).success
    assert requests_for(evaluate(retry_sensor, instance, layout), "validation") == []
    before = load_status(layout.status_dir, keys[1])
    assert before is not None

    # A refresh fetches two of them again: what was built from the old bodies is stale.
    forced = {"ops": {"executor_chain": {"config": {"force": True}}}}
    assert materialize_range("scrape", keys[1], keys[2], run_config=forced).success
    (validation,) = requests_for(evaluate(retry_sensor, instance, layout), "validation")
    assert covered(instance, [validation]) == {keys[1], keys[2]}
    assert execute(materialize_range, validation).success
    (pages,) = requests_for(evaluate(retry_sensor, instance, layout), "pages")
    assert covered(instance, [pages]) == {keys[1], keys[2]}
    assert execute(materialize_range, pages).success

    after = load_status(layout.status_dir, keys[1])
    assert after is not None and after["pages_last_run"] > before["pages_last_run"]
    assert requests_for(evaluate(retry_sensor, instance, layout), "validation") == []
    assert requests_for(evaluate(retry_sensor, instance, layout), "pages") == []


def test_after_a_chain_run_with_failures_the_retry_sensor_asks_for_exactly_the_failures(
    site_thread: SiteThread,
    add_task_rows: Callable[[TaskRows], list[str]],
    layout: DataLayout,
    instance: dg.DagsterInstance,
    materialize_range: Materialize,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SCRAPEFLOW_RETRY_BACKOFF_SECONDS", "0")
    rows = [(key, site_thread.url(f"/page/{n}")) for n, key in enumerate(GOOD)]
    rows.insert(2, (FLAKY, site_thread.url("/flaky/chain-x?fail=-1")))  # transient
    rows.insert(4, (MISSING, site_thread.url("/status/404")))  # permanent
    rows.insert(6, (CAPTCHA, site_thread.url("/captcha")))  # blocked at validation
    keys = add_task_rows(rows)
    assert not materialize_range(["scrape", "validation", "pages"], keys[0], keys[-1]).success

    result = evaluate(retry_sensor, instance, layout)

    # The transient fetch is retried, the block page fetched again (forced); nothing waits
    # below a failure as "failed", so no validation or pages run is asked for.
    assert isinstance(result, dg.SensorResult)
    asked = {
        (tuple(k.to_user_string() for k in r.asset_selection or []), r.tags["scrapeflow/reason"])
        for r in result.run_requests or []
    }
    assert asked == {(("scrape",), "retry"), (("scrape",), "refetch-validation")}
    assert FLAKY in covered(instance, requests_for(result, "scrape"))
    assert MISSING not in covered(instance, requests_for(result, "scrape"))
    refetch = [r for r in requests_for(result, "scrape") if r.run_config]
    assert covered(instance, refetch) == {CAPTCHA}
