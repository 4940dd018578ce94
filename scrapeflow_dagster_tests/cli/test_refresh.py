"""`scrapeflow refresh` chooses what a refresh asks again: stale successes, failed tasks only
with `--failed` and never permanent failures; durations and selections are checked."""

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from scrapeflow_dagster.cli import common
from scrapeflow_dagster.cli.refresh import DueTasks, due_keys, parse_duration, within_budget
from scrapeflow_dagster.engine.state.files import write_status
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster_tests.cli.helpers import Run

DAY = 86400.0


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90), ("30m", 1800), ("12h", 43200), ("7d", 7 * DAY), ("0", 0)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "7 days", "-1d", "1y", "d"])
def test_bad_durations_are_named(text: str) -> None:
    with pytest.raises(common.UsageError, match="--older-than"):
        parse_duration(text)


def _status(scrape_status: str, last_run: str, kind: str | None = None) -> dict:
    status: dict = {"params": {"url": "http://x.test/"}, "scrape_status": scrape_status}
    status["scrape_last_run"] = last_run
    if scrape_status == "SUCCESS":
        status["scrape"] = {"http_status": 200}
    if kind:
        status["scrape_error_kind"] = kind
    return status


def test_stale_successes_and_only_retryable_failures_are_due(tmp_path: Path) -> None:
    folder = tmp_path / "status"
    folder.mkdir()
    old, new = "2020-01-01 00:00:00", "2999-01-01 00:00:00"
    write_status(folder, "old", _status("SUCCESS", old))
    write_status(folder, "new", _status("SUCCESS", new))
    write_status(
        folder, "gone", _status("ERROR HttpStatusError::HTTP response 404", old, "permanent")
    )
    write_status(
        folder, "down", _status("ERROR HttpStatusError::HTTP response 503", old, "transient")
    )
    write_status(folder, "robots", _status("DISALLOWED", old, "disallowed"))
    write_status(folder, "never", {"params": {"url": "http://x.test/n"}})

    assert due_keys(folder, "scrape", DAY, with_failed=False) == DueTasks(stale={"old"})
    assert due_keys(folder, "scrape", DAY, with_failed=True) == DueTasks(
        stale={"old"}, failed={"down"}
    )


def test_a_sitemap_lastmod_after_the_fetch_makes_a_page_due_whatever_its_age(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "status"
    folder.mkdir()
    for key in ("changed", "late-by-zone", "dated-before", "undated"):
        write_status(folder, key, _status("SUCCESS", "2026-01-10 00:00:00"))
    write_status(folder, "recent", _status("SUCCESS", "2999-01-01 00:00:00"))
    lastmods = {
        "changed": datetime(2026, 1, 11, tzinfo=UTC),
        # 23:00 on the 9th at -02:00 is 01:00 UTC on the 10th: after the fetch.
        "late-by-zone": datetime(2026, 1, 9, 23, tzinfo=timezone(timedelta(hours=-2))),
        # ... and at +02:00 it is 21:00 UTC on the 9th: before it.
        "dated-before": datetime(2026, 1, 9, 23, tzinfo=timezone(timedelta(hours=2))),
        "recent": datetime(2999, 1, 2, tzinfo=UTC),
    }

    assert due_keys(folder, "scrape", DAY, with_failed=False, lastmods=lastmods) == DueTasks(
        stale={"dated-before", "undated"}, changed={"changed", "late-by-zone", "recent"}
    )
    trusted = due_keys(
        folder, "scrape", DAY, with_failed=False, lastmods=lastmods, trust_lastmod=True
    )
    assert (trusted.stale, trusted.unchanged) == ({"undated"}, {"dated-before"})


def test_bad_usage_exits_2(run_command: Run, layout: DataLayout) -> None:
    bad = run_command("scrapeflow", "refresh", "--older-than", "soon")
    unknown = run_command("scrapeflow", "refresh", "--select", "scrape,pagez")

    assert bad.returncode == 2 and "--older-than 'soon'" in bad.stderr
    assert unknown.returncode == 2 and "pagez" in unknown.stderr


def test_budgets_take_failed_tasks_asked_for_then_the_oldest_and_cap_each_host(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "status"
    folder.mkdir()
    for n, (host, day) in enumerate([("a", 1), ("a", 2), ("a", 3), ("b", 4)]):
        status = _status("SUCCESS", f"2020-01-0{day} 00:00:00")
        status["params"]["url"] = f"http://u:secret@{host}.test:8080/{n}"
        write_status(folder, f"old{n}", status)
    write_status(
        folder,
        "down",
        _status("ERROR HttpStatusError::HTTP response 503", "2020-01-01", "transient"),
    )
    due = due_keys(folder, "scrape", DAY, with_failed=True)
    assert (due.stale, due.failed) == ({"old0", "old1", "old2", "old3"}, {"down"})

    assert within_budget(due, 3, None) == DueTasks(
        stale={"old0", "old1"}, failed={"down"}, over_budget=2
    )
    # Per host (userinfo is not the host): a.test:8080 twice, b.test:8080 once, then the failure.
    assert within_budget(due, None, 2) == DueTasks(
        stale={"old0", "old1", "old3"}, failed={"down"}, over_budget=1
    )
