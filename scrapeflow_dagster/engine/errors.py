"""What can go wrong with one task, sorted into the kinds the retry policy acts on.

Every error a task can record subclasses `RuntimeError` (scrapeflow's "recognised" failure), so
code written against scrapeflow's `except RuntimeError` keeps working.
"""

from enum import StrEnum


class ErrorKind(StrEnum):
    """How an outcome is treated: retried, given up on, or charged to the proxy."""

    TRANSIENT = "transient"  # connection errors, timeouts, 5xx, 408, 429: retry with backoff
    PERMANENT = "permanent"  # other 4xx, body too large, bad URL: do not retry
    BLOCKED = "blocked"  # block codes or a failed validation: retry through another proxy
    PROXY = "proxy"  # the proxy itself failed (connect, auth): retry through another proxy


class ScrapeError(RuntimeError):
    """A recorded, per-task failure with the kind that decides whether it is retried."""

    kind: ErrorKind = ErrorKind.PERMANENT


class HttpStatusError(ScrapeError):
    """A final HTTP status other than the accepted ones (scrapeflow: `HTTP response N`)."""

    def __init__(self, status: int, *, kind: ErrorKind, retry_after_seconds: float | None = None):
        super().__init__(f"HTTP response {status}")
        self.status = status
        self.kind = kind
        self.retry_after_seconds = retry_after_seconds


class BlockedError(ScrapeError):
    """The page is a block or captcha page, not the content asked for."""

    kind = ErrorKind.BLOCKED


class ProxyError(ScrapeError):
    """The proxy could not be reached or refused us; the target was never asked."""

    kind = ErrorKind.PROXY


class BodyTooLargeError(ScrapeError):
    """The response body is larger than the configured cap."""

    kind = ErrorKind.PERMANENT


class TransientError(ScrapeError):
    """A network failure or timeout worth retrying (wraps aiohttp and timeout errors)."""

    kind = ErrorKind.TRANSIENT


class InvalidTaskError(ValueError):
    """A task key, URL or params that cannot be used; the message names the input."""


class StatusFileError(ValueError):
    """A status file that is truncated, not JSON or not a scrapeflow status; names the file."""
