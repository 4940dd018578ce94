"""The retry decision functions `scrape` uses: backoff, Retry-After and the kind of a status."""

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from scrapeflow_dagster.engine.errors import ErrorKind
from scrapeflow_dagster.engine.retry.requests import backoff_seconds, parse_retry_after, status_kind
from scrapeflow_dagster.engine.settings import RetryPolicy


def test_backoff_grows_exponentially_with_jitter_within_bounds() -> None:
    policy = RetryPolicy(backoff_base_seconds=0.5, backoff_max_seconds=10.0)
    rng = random.Random(7)
    for failures in range(1, 10):
        ceiling = min(10.0, 0.5 * 2 ** (failures - 1))
        delays = [backoff_seconds(failures, policy, rng=rng) for _ in range(200)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(set(delays)) > 100  # jittered, not synchronised
    assert backoff_seconds(4, policy, rng=random.Random(1)) > backoff_seconds(
        1, policy, rng=random.Random(1)
    )


def test_backoff_honours_retry_after_up_to_the_cap() -> None:
    policy = RetryPolicy(backoff_base_seconds=0.01, retry_after_max_seconds=30.0)
    assert backoff_seconds(1, policy, retry_after_seconds=7) == 7
    assert backoff_seconds(1, policy, retry_after_seconds=3600) == 30
    assert backoff_seconds(1, policy, retry_after_seconds=0) <= 0.01


def test_parse_retry_after() -> None:
    now = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after(" 5 ") == 5.0
    assert parse_retry_after(
        format_datetime(now + timedelta(seconds=30), usegmt=True), now=now
    ) == (30.0)
    assert parse_retry_after(format_datetime(now - timedelta(hours=1), usegmt=True), now=now) == 0
    for value in (None, "", "soon", "-5", "1.5"):
        assert parse_retry_after(value) is None


@pytest.mark.parametrize(
    ("status", "via_proxy", "kind"),
    [
        (200, False, None),
        (404, False, ErrorKind.PERMANENT),
        (410, False, ErrorKind.PERMANENT),
        (403, False, ErrorKind.BLOCKED),
        (407, True, ErrorKind.PROXY),
        (407, False, ErrorKind.PERMANENT),
        (408, False, ErrorKind.TRANSIENT),
        (429, False, ErrorKind.TRANSIENT),
        (500, False, ErrorKind.TRANSIENT),
        (503, True, ErrorKind.TRANSIENT),
        (204, False, ErrorKind.PERMANENT),  # scrapeflow: any final status but 200 is an error
    ],
)
def test_status_kind(status: int, via_proxy: bool, kind: ErrorKind | None) -> None:
    assert status_kind(status, RetryPolicy(), via_proxy=via_proxy) == kind
