"""The between-runs retry decision, one row per case: due, wait, give up, re-fetch, done."""

from datetime import datetime, timedelta
from typing import Any

import pytest

from scrapeflow_dagster.engine.retry.between_runs import Decision, RetryRules, decide
from scrapeflow_dagster.engine.state.schema import stamp

NOW = datetime(2026, 11, 22, 12, 0, 0)
RULES = RetryRules(max_failed_runs=3, backoff_base_seconds=60, backoff_max_seconds=600)


def ago(seconds: float) -> str:
    return stamp(NOW - timedelta(seconds=seconds))


def failed(name: str, *, kind: str | None, failures: int | None, seconds_ago: float) -> dict:
    status: dict[str, Any] = {
        f"{name}_status": "ERROR HttpStatusError::HTTP response 503",
        f"{name}_last_run": ago(seconds_ago),
    }
    if kind is not None:
        status[f"{name}_error_kind"] = kind
    if failures is not None:
        status[f"{name}_failures"] = failures
    return status


SCRAPE_OK = {"scrape": {"size": 1}, "scrape_status": "SUCCESS", "scrape_last_run": ago(3600)}

CASES = [
    # (case, status, name, requires, decision)
    ("no status file", None, "scrape", (), Decision.DUE),
    ("never ran", {"name": "k", "params": {}}, "scrape", (), Decision.DUE),
    ("succeeded", SCRAPE_OK, "scrape", (), Decision.DONE),
    (
        "transient, backoff over (60 s after the 1st failure)",
        failed("scrape", kind="transient", failures=1, seconds_ago=61),
        "scrape",
        (),
        Decision.DUE,
    ),
    (
        "transient, inside the backoff",
        failed("scrape", kind="transient", failures=1, seconds_ago=59),
        "scrape",
        (),
        Decision.WAIT,
    ),
    (
        "backoff doubles: 120 s after the 2nd failure",
        failed("scrape", kind="transient", failures=2, seconds_ago=100),
        "scrape",
        (),
        Decision.WAIT,
    ),
    (
        "backoff is capped (600 s)",
        failed("scrape", kind="transient", failures=2, seconds_ago=601),
        "scrape",
        (),
        Decision.DUE,
    ),
    (
        "attempt cap reached",
        failed("scrape", kind="transient", failures=3, seconds_ago=10_000),
        "scrape",
        (),
        Decision.GIVE_UP,
    ),
    (
        "disallowed by robots.txt is never retried (nothing was ever requested)",
        failed("scrape", kind="disallowed", failures=1, seconds_ago=10_000),
        "scrape",
        (),
        Decision.GIVE_UP,
    ),
    (
        "permanent is never retried",
        failed("scrape", kind="permanent", failures=1, seconds_ago=10_000),
        "scrape",
        (),
        Decision.GIVE_UP,
    ),
    (
        "a scrapeflow error (no kind, no count) counts as one transient failure",
        failed("scrape", kind=None, failures=None, seconds_ago=61),
        "scrape",
        (),
        Decision.DUE,
    ),
    (
        "proxy failures are retried",
        failed("scrape", kind="proxy", failures=1, seconds_ago=61),
        "scrape",
        (),
        Decision.DUE,
    ),
    (
        "a block found by a later step asks for a new fetch",
        SCRAPE_OK | failed("validation", kind="blocked", failures=1, seconds_ago=61),
        "validation",
        ("scrape",),
        Decision.REFETCH,
    ),
    (
        "upstream ran again after the failure: due at once, backoff or not",
        {**SCRAPE_OK, "scrape_last_run": ago(1)}
        | failed("validation", kind="blocked", failures=1, seconds_ago=30),
        "validation",
        ("scrape",),
        Decision.DUE,
    ),
    (
        "upstream not ready is retried once it is",
        failed("pages", kind="upstream", failures=1, seconds_ago=61),
        "pages",
        ("scrape",),
        Decision.DUE,
    ),
]


@pytest.mark.parametrize(
    ("status", "name", "requires", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_decide(status: dict | None, name: str, requires: tuple, expected: Decision) -> None:
    assert decide(status, name, RULES, NOW, requires=requires) == expected


def test_stamps_compare_as_times_not_as_strings() -> None:
    """A stamp written with ISO's `T` (another tool's `isoformat()`) sorts after any stamp with
    a space as a string; as a time, this upstream run is older than the failure."""
    status = failed("validation", kind="blocked", failures=1, seconds_ago=0)
    status |= {"scrape": {}, "scrape_status": "SUCCESS", "scrape_last_run": "2026-11-22T11:00:00"}

    assert decide(status, "validation", RULES, NOW, requires=("scrape",)) == Decision.WAIT
