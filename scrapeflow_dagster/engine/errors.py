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
    UPSTREAM = "upstream"  # a step it needs has not succeeded: due once that one succeeds
    DISALLOWED = "disallowed"  # robots.txt forbids the URL: never requested, never retried


class ScrapeError(RuntimeError):
    """A recorded, per-task failure with the kind that decides whether it is retried.

    `attempts` (tries made) and `proxy_host` (host:port of the last proxy, never its
    credentials) are set by the fetch loop and recorded in the task's status.
    """

    kind: ErrorKind = ErrorKind.PERMANENT
    attempts: int = 1
    proxy_host: str | None = None
    status: int | None = None  # the HTTP status, when the failure is an answer


class HttpStatusError(ScrapeError):
    """A final HTTP status other than the accepted ones (scrapeflow: `HTTP response N`)."""

    status: int

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


class DisallowedError(ScrapeError):
    """robots.txt forbids fetching the URL for our User-Agent; no request was sent."""

    kind = ErrorKind.DISALLOWED
    attempts = 0


class RobotsUnavailableError(TransientError):
    """robots.txt could not be read (5xx, 429, network): nothing at that origin is fetched in
    this run, and the task is retried in a later one."""


class RedirectRefusedError(ScrapeError):
    """A redirect the fetch would not follow: to a non-http(s) URL, out of the crawl's scope,
    or past the redirect limit. The message names the hop; never retried."""

    kind = ErrorKind.PERMANENT


class TooManyRedirectsError(RedirectRefusedError):
    """A request redirected more times than `max_redirects` (a loop, or an endless chain)."""


class AddressRefusedError(ScrapeError):
    """The address guard refused a request: its host is (or resolves to) a loopback, private,
    link-local, multicast or reserved address while the task's own URL is public."""

    kind = ErrorKind.PERMANENT


class InvalidTaskError(ValueError):
    """A task key, URL or params that cannot be used; the message names the input."""


class UpstreamMissingError(InvalidTaskError):
    """A step was asked for before the step it needs succeeded for that task."""

    kind = ErrorKind.UPSTREAM


class StatusFileError(ValueError):
    """A status file that is truncated, not JSON or not a scrapeflow status; names the file."""


class ExtractionError(ScrapeError):
    """A task's extraction cannot be done: a required field matched nothing on the page, or its
    selector set is missing or invalid. The page was fetched and parsed; fetching it again
    gives the same page, so it is not retried (fix the set, then run the step again)."""

    kind = ErrorKind.PERMANENT


class RenderError(ScrapeError):
    """A page marked `render: true` could not be rendered: no browser here (the `browser`
    extra, or the Chromium it drives, is missing), or the page's document did not load in
    time (`TransientRenderError`)."""

    kind = ErrorKind.PERMANENT


class TransientRenderError(RenderError):
    """The rendered document's load event did not come in time, or the browser crashed."""

    kind = ErrorKind.TRANSIENT
