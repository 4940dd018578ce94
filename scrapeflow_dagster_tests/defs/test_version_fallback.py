"""A Dagster the storages are not verified on is said where users look: a warning in each run's
log and a failing `no_failed_tasks` check naming the version (not once in a process log).

The installed Dagster is verified (pyproject pins it), so the test narrows `VERIFIED` to
another patch for the run: what a user who forced a newer Dagster would see."""

import logging
from collections.abc import Callable

import dagster as dg
import pytest

from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster.storage.dagster_internals import version_guard
from scrapeflow_dagster_tests.defs.conftest import Materialize
from scrapeflow_dagster_tests.support.tasks import TaskRows


def _checks(result: dg.ExecuteInProcessResult) -> list[dg.AssetCheckEvaluation]:
    return [
        event.event_specific_data  # type: ignore[misc]
        for event in result.all_events
        if event.event_type_value == "ASSET_CHECK_EVALUATION"
    ]


@pytest.mark.parametrize("verified", [True, False], ids=["verified", "unverified"])
def test_an_unverified_dagster_fails_the_check_and_warns_in_the_run_log(
    site_thread: SiteThread,
    add_task_rows: Callable[[TaskRows], list[str]],
    materialize_range: Materialize,
    instance: dg.DagsterInstance,
    monkeypatch: pytest.MonkeyPatch,
    verified: bool,
) -> None:
    monkeypatch.delenv(version_guard.ADMIT_INSTALLED_ENV, raising=False)
    if not verified:
        monkeypatch.setitem(version_guard.VERIFIED, "dagster", ("0.0.1",))
    keys = add_task_rows([(f"t{n}", site_thread.url(f"/page/{n}")) for n in range(2)])
    result = materialize_range("scrape", keys[0], keys[-1])

    (check,) = _checks(result)
    installed = version_guard.installed_version("dagster")
    warned = [
        entry.user_message
        for entry in instance.all_logs(result.run_id)
        if entry.level == logging.WARNING and "not verified" in entry.user_message
    ]
    if verified:
        assert check.passed and "dagster_unverified" not in check.metadata
        assert warned == []
        return
    assert not check.passed
    named = check.metadata["dagster_unverified"].value
    assert f"dagster {installed} is not verified" in str(named)
    assert check.description is not None and f"dagster {installed}" in check.description
    # The run's own log (what the UI's run page shows) says it, as a warning.
    assert len(warned) == 1 and f"dagster {installed} is not verified" in warned[0]
