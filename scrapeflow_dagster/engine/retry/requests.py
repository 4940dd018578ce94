"""The retry decision as plain functions: classify an outcome, compute the next delay."""

import random
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import aiohttp

from scrapeflow_dagster.engine.errors import (
    ErrorKind,
    HttpStatusError,
    ProxyError,
    ScrapeError,
    TransientError,
)
from scrapeflow_dagster.engine.redact import redact
from scrapeflow_dagster.engine.settings import RetryPolicy

_TRANSIENT_STATUSES = frozenset({408, 429})


def status_kind(status: int, policy: RetryPolicy, *, via_proxy: bool) -> ErrorKind | None:
    """The kind of a final HTTP status, or None when it is accepted."""
    if status in policy.ok_status_codes:
        return None
    if via_proxy and status == 407:
        return ErrorKind.PROXY
    if status in policy.block_status_codes:
        return ErrorKind.BLOCKED
    if status >= 500 or status in _TRANSIENT_STATUSES:
        return ErrorKind.TRANSIENT
    return ErrorKind.PERMANENT


def as_scrape_error(exc: BaseException, *, via_proxy: bool) -> ScrapeError:
    """Wrap a network-level exception into a `ScrapeError` with the right kind.

    Proxy connection and proxy-auth failures are charged to the proxy; redirect loops, bad
    URLs and TLS failures are permanent; every other network failure or timeout is
    transient. Messages are redacted (aiohttp may echo a proxy URL).
    """
    if isinstance(exc, ScrapeError):
        return exc
    name = type(exc).__name__
    text = redact(str(exc)) or "no message"
    if isinstance(exc, aiohttp.ClientProxyConnectionError | aiohttp.ClientHttpProxyError):
        return ProxyError(f"{name}: {text}")
    # A bad certificate or TLS handshake does not heal by retrying: permanent.
    permanent = (
        aiohttp.TooManyRedirects,
        aiohttp.RedirectClientError,  # to a non-http(s) or invalid URL (robots.txt's redirects)
        aiohttp.NonHttpUrlClientError,
        aiohttp.InvalidURL,
        aiohttp.ClientConnectorCertificateError,
        aiohttp.ClientSSLError,
    )
    if isinstance(exc, permanent):
        return ScrapeError(f"{name}: {text}")
    if isinstance(exc, TimeoutError):
        return TransientError(f"{name}: request timed out")
    if via_proxy and isinstance(exc, aiohttp.ClientConnectorError):
        return ProxyError(f"{name}: {text}")
    return TransientError(f"{name}: {text}")


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or HTTP-date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def backoff_seconds(
    failures: int,
    policy: RetryPolicy,
    *,
    retry_after_seconds: float | None = None,
    rng: random.Random | None = None,
) -> float:
    """Delay before the next try after `failures` transient failures in a row.

    Exponential (base * 2^(failures-1), capped) with "equal jitter" (half fixed, half random)
    so that many tasks failing together do not retry together; a `Retry-After` is honoured
    up to `policy.retry_after_max_seconds`.
    """
    ceiling = min(policy.backoff_max_seconds, policy.backoff_base_seconds * 2 ** (failures - 1))
    delay = ceiling / 2 + (rng or random).uniform(0, ceiling / 2)
    if retry_after_seconds is not None:
        delay = max(delay, min(retry_after_seconds, policy.retry_after_max_seconds))
    return delay


def retry_after_of(exc: ScrapeError) -> float | None:
    """The server's requested delay carried by an HTTP status error, if any."""
    return exc.retry_after_seconds if isinstance(exc, HttpStatusError) else None
