"""The retry sensor's decisions, evaluated with `build_sensor_context` on a real instance,
the runs it requests executed with the same assets, tags and config. The real daemon runs it
in `test_daemon.py`."""

from collections.abc import Callable, Sequence

import dagster as dg
import pytest

from scrapeflow_dagster.defs.automation import RANGE_END_TAG, RANGE_START_TAG
from scrapeflow_dagster.defs.sensors import retry_sensor
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.status import load_status
from scrapeflow_dagster.lib.partitions import TASKS_PARTITIONS_NAME
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.defs.conftest import Materialize
from scrapeflow_dagster_tests.defs.sensor_ticks import evaluate, execute
from scrapeflow_dagster_tests.support.partitions import Status, partition_statuses
from scrapeflow_dagster_tests.support.sites import post
from scrapeflow_dagster_tests.support.tasks import TaskRows

MISSING = "missing-x"
FLAKY = "flaky-x"
CAPTCHA = "captcha-x"
GOOD = [f"good-{n}" for n in range(7)]


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
