"""Faults of the site (5xx, resets, slow answers, truncated bodies, 429, captcha pages): every
outcome is recorded, requests are retried, runs fail only through the failed tasks, and the
retry sensor converges, leaving the tasks that hit the cap alone."""

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import dagster as dg
import pytest

from scrapeflow_dagster.defs.sensors import retry_sensor
from scrapeflow_dagster.site.app import FaultRates, fault_of
from scrapeflow_dagster_tests.reliability.conftest import Homes
from scrapeflow_dagster_tests.reliability.helpers import (
    assert_failed_only_through_tasks,
    error_class,
    read_all_statuses,
    snapshot_files,
)
from scrapeflow_dagster_tests.support.ledger import current_state, query
from scrapeflow_dagster_tests.support.partitions import Status, partition_statuses, range_tags
from scrapeflow_dagster_tests.support.runs import run_assets, run_resources
from scrapeflow_dagster_tests.support.sensors import sensor_context
from scrapeflow_dagster_tests.support.sites import site_process
from scrapeflow_dagster_tests.support.tasks import store_and_add

MIXED_TASKS = 300
SEED = 0  # the site's default
RATES = FaultRates(slow_seconds=3.0)  # a slow answer outlasts the 1 s request timeout
MAX_FAILED_RUNS = 2
# The error class `scrape` records for a fault that never ends (`?sticky=1`); all are transient.
STICKY_ERRORS = {
    "server_error": "HttpStatusError",
    "too_many": "HttpStatusError",
    "reset": "TransientError",
    "slow": "TransientError",
    "truncated": "TransientError",
}
MAX_ATTEMPTS = 4


def sticky_pages() -> dict[str, int]:
    """One page per fault kind past the mixed tasks, served with the fault for ever."""
    found: dict[str, int] = {}
    n = MIXED_TASKS
    while len(found) < len(STICKY_ERRORS) + 1:
        fault = fault_of(n, SEED, RATES)
        if fault is not None and fault not in found:
            found[fault] = n
        n += 1
    return found


@pytest.fixture
def site() -> Iterator[str]:
    """The site in its own process (a 1 s timeout must not depend on sharing our GIL)."""
    with site_process(pages=1000, page_bytes=4000, slow_seconds=RATES.slow_seconds) as base_url:
        yield base_url


def run(
    instance: dg.DagsterInstance,
    homes: Homes,
    selection: Any,
    tags: dict[str, str],
    run_config: Any = None,
) -> dg.ExecuteInProcessResult:
    """A run with small backoffs and a 1 s request timeout (the slow fault outlasts it)."""
    resources = run_resources(
        homes.data_dir,
        backoff_base_seconds=0.05,
        backoff_max_seconds=0.2,
        request_timeout_seconds=1.0,
        max_attempts=MAX_ATTEMPTS,
    )
    return run_assets(instance, resources, selection, tags, run_config)


@dataclass
class Mix:
    """The tasks: `/mixed/{n}` pages (fault by `fault_of`) and one never-ending fault per kind."""

    keys: list[str]
    faults: dict[str, str | None]  # mixed task -> its fault (None: a normal page)
    sticky: set[str]  # transient faults for ever: fail each run, given up at the cap
    captcha: set[str]  # captcha pages, the one-off ones and `sticky-captcha`


def add_mix(site: str, homes: Homes, instance: dg.DagsterInstance) -> Mix:
    faults = {f"mixed-{n:03d}": fault_of(n, SEED, RATES) for n in range(MIXED_TASKS)}
    assert set(faults.values()) == {None, "captcha", *STICKY_ERRORS}  # every fault is in the mix
    rows = [(key, f"{site}/mixed/{n}") for n, key in enumerate(faults)]
    pages = sticky_pages()
    rows += [(f"sticky-{fault}", f"{site}/mixed/{n}?sticky=1") for fault, n in pages.items()]
    keys = store_and_add(homes.layout, instance, rows)
    return Mix(
        keys=keys,
        faults=faults,
        sticky={f"sticky-{fault}" for fault in STICKY_ERRORS},
        captcha={k for k, f in faults.items() if f == "captcha"} | {"sticky-captcha"},
    )


def assert_outcomes_recorded(mix: Mix, homes: Homes) -> None:
    """Status files and DuckDB agree on each task: error class and kind where it failed,
    attempts > 1 (retries) exactly for the faulty pages."""
    statuses = read_all_statuses(homes.layout.status_dir)
    state = current_state(homes.layout.db_path, "scrape")
    assert sorted(state) == sorted(mix.keys)
    for key in mix.keys:
        status, row = statuses[key], state[key]
        if key in mix.sticky:
            expected = STICKY_ERRORS[key.removeprefix("sticky-")]
            assert error_class(status["scrape_status"]) == expected, key
            assert status["scrape_error_kind"] == "transient", key
            assert status["scrape_attempts"] == MAX_ATTEMPTS, key
            recorded = (row["status"], row["error_class"], row["error_kind"], row["attempts"])
            assert recorded == ("ERROR", expected, "transient", MAX_ATTEMPTS), key
            continue
        fault = "captcha" if key in mix.captcha else mix.faults[key]
        assert status["scrape_status"] == "SUCCESS", (key, fault, status["scrape_status"])
        assert (row["status"], row["md5"]) == ("SUCCESS", status["scrape"]["content"]), key
        # One failed request per fault (two for a reset, which aiohttp may retry by itself);
        # a captcha page is a 200 to `scrape`.
        expected_attempts = {None: {1}, "captcha": {1}, "reset": {2, 3}}.get(fault, {2})
        assert status["scrape_attempts"] in expected_attempts, (key, fault)
        assert row["attempts"] == status["scrape_attempts"], key
    retried = Counter(f for k, f in mix.faults.items() if statuses[k]["scrape_attempts"] > 1)
    assert set(retried) == set(STICKY_ERRORS)


def drive_retry_sensor(
    instance: dg.DagsterInstance, homes: Homes, *, max_ticks: int = 10
) -> Counter[str]:
    """Evaluate the retry sensor and run what it asks for, until it skips; runs per asset."""
    requested: Counter[str] = Counter()
    for _ in range(max_ticks):
        result = retry_sensor(sensor_context(instance, homes.data_dir))
        if isinstance(result, dg.SkipReason):
            return requested
        assert isinstance(result, dg.SensorResult) and result.run_requests
        for request in result.run_requests:
            assert request.asset_selection is not None
            requested[request.asset_selection[0].to_user_string()] += 1
            run(instance, homes, request.asset_selection, dict(request.tags), request.run_config)
    raise AssertionError(f"the retry sensor did not converge in {max_ticks} ticks: {requested}")


def assert_converged(mix: Mix, homes: Homes, instance: dg.DagsterInstance) -> None:
    statuses = read_all_statuses(homes.layout.status_dir)
    for key in mix.keys:
        status = statuses[key]
        if key in mix.sticky:
            # Given up at the cap: failed twice, never validated.
            assert status["scrape_failures"] == MAX_FAILED_RUNS, key
            assert "validation_status" not in status
        elif key == "sticky-captcha":
            # A block page every time: blocked, re-fetched, blocked again, given up.
            assert status["scrape_status"] == "SUCCESS"
            assert error_class(status["validation_status"]) == "BlockedError", key
            assert status["validation_error_kind"] == "blocked"
            assert status["validation_failures"] == MAX_FAILED_RUNS
            assert "pages_status" not in status
        else:
            for step in ("scrape", "validation", "pages"):
                assert status[f"{step}_status"] == "SUCCESS", (key, step)
    errors = query(
        homes.layout.db_path,
        "SELECT executor, key, error_class, error_kind, count(*) FROM step_runs "
        "WHERE status = 'ERROR' GROUP BY ALL",
    )
    assert {e for e, *_ in errors} == {"scrape", "validation"}
    scrape_errors = {(k, n) for e, k, _, _, n in errors if e == "scrape"}
    assert scrape_errors == {(k, MAX_FAILED_RUNS) for k in mix.sticky}
    # Captcha pages pass `scrape` (a 200) and fail `validation` as blocked; a re-fetch cures
    # those whose block page was a one-off.
    validation_errors = {k: (c, kind, n) for e, k, c, kind, n in errors if e == "validation"}
    assert set(validation_errors) == mix.captcha
    for key, (cls, kind, count) in validation_errors.items():
        expected = MAX_FAILED_RUNS if key == "sticky-captcha" else 1
        assert (cls, kind, count) == ("BlockedError", "blocked", expected), key

    failed = {
        asset: {k for k, v in partition_statuses(instance, asset, mix.keys).items() if v == status}
        for asset, status in (("scrape", Status.FAILED), ("validation", Status.FAILED))
    }
    assert failed == {"scrape": mix.sticky, "validation": {"sticky-captcha"}}
    pages = partition_statuses(instance, "pages", mix.keys)
    assert {k for k, v in pages.items() if v is None} == {*mix.sticky, "sticky-captcha"}


def test_faults_are_recorded_retried_and_the_retry_sensor_converges(
    site: str,
    homes: Homes,
    instance: dg.DagsterInstance,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mix = add_mix(site, homes, instance)

    first = run(instance, homes, ["scrape"], range_tags(mix.keys[0], mix.keys[-1]))

    assert_failed_only_through_tasks(first, failed=len(mix.sticky))
    assert_outcomes_recorded(mix, homes)

    monkeypatch.setenv("SCRAPEFLOW_RETRY_BACKOFF_SECONDS", "0")
    monkeypatch.setenv("SCRAPEFLOW_RETRY_MAX_FAILED_RUNS", str(MAX_FAILED_RUNS))
    requested = drive_retry_sensor(instance, homes)

    assert requested["validation"] >= 1 and requested["pages"] >= 1, requested
    assert_converged(mix, homes, instance)
    # Given-up tasks are left alone: another tick asks for nothing and changes no file.
    before = snapshot_files(homes.layout.status_dir)
    assert isinstance(retry_sensor(sensor_context(instance, homes.data_dir)), dg.SkipReason)
    assert snapshot_files(homes.layout.status_dir) == before
