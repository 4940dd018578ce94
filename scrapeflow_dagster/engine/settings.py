"""Tunable behaviour of a scrape, with units in the names and documented defaults."""

from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version

from scrapeflow_dagster.engine.revisit.digest import DEFAULT_NOISE, DIGEST_BASES, noise_pattern
from scrapeflow_dagster.engine.revisit.rule import RevisitPolicy


def _package_version() -> str:
    try:
        return version("scrapeflow-dagster")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "dev"


# Names this project and where to read about it, as polite crawlers do (sites read it in logs).
DEFAULT_USER_AGENT = (
    f"scrapeflow-dagster/{_package_version()} (+https://pypi.org/project/scrapeflow-dagster/)"
)

# Defaults of a run and of the proxy pool: the one place each is written (resources and
# `execute_async` read them from here).
DEFAULT_MAX_PARALLELISM = 100  # tasks in flight at once
DEFAULT_TIMEOUT_SECONDS = 30.0  # one executor for one task, retries included
DEFAULT_PROXY_ERROR_THRESHOLD = 3.0  # error score at which a proxy is benched
DEFAULT_PROXY_COOLDOWN_SECONDS = 300.0  # how long a benched proxy stays out
DEFAULT_REFRESH_MAX_AGE_HOURS = 168  # the refresh schedule re-scrapes successes older than this
# Politeness, on by default as in Scrapy and Crawlee.
DEFAULT_RESPECT_ROBOTS_TXT = True
DEFAULT_ROBOTS_MAX_AGE_SECONDS = 24 * 3600.0  # a cached robots.txt older than this is re-fetched
DEFAULT_MAX_PER_HOST = 8  # requests in flight per host:port, across runs (Scrapy's default)
DEFAULT_PER_HOST_DELAY_SECONDS = 0.0  # between request starts at one host, across runs
# Other origins one sitemap reading may look at (see `SitemapSettings`).
DEFAULT_MAX_OTHER_ORIGINS_PER_READING = 50
# What installs the Markdown converter `page_markdown` needs.
MARKDOWN_EXTRA = "pip install 'scrapeflow-dagster[markdown]'"
# Where `page_main_content` cuts a page's main text and Markdown when `page_text_max_chars` is
# 0 (no whole-page text): a bound on a status file, far above an article's main content.
MAIN_CONTENT_MAX_CHARS = 100_000
# The Chromium a task marked `render: true` is rendered in: `auto`, Debian's headless shell when
# installed, else its Chromium (`render.browser.CHROMIUM_CANDIDATES`); never downloaded.
AUTO_CHROMIUM = "auto"
DEFAULT_CHROMIUM_PATH = AUTO_CHROMIUM


@dataclass(frozen=True, slots=True)
class RenderSettings:
    """How the `render` step renders a page in a browser (`engine.render`)."""

    chromium_path: str = DEFAULT_CHROMIUM_PATH  # a path, or `auto` (the system's, see above)
    # Resource types (the DevTools protocol's, lower-cased: Playwright's names) the page's
    # requests are refused for, never fetched.
    blocked_resources: tuple[str, ...] = ("image", "font", "media")
    timeout_seconds: float = 30.0  # the document's load event, at most (then a transient error)
    # Then at most this long for the network to go quiet (no request for 250 ms:
    # `render.document.QUIET_SECONDS`); a page that never settles is kept as it is then,
    # marked `settled: false`.
    settle_seconds: float = 3.0
    # A browser context (cookies, cache, the renderer's memory) serves this many pages, then a
    # fresh one takes over: what keeps a long run's memory flat (its renderer grows by about a
    # MiB a page: 20 is the peak of 50 less 30-40 MiB, at no fewer pages a second).
    pages_per_context: int = 20
    # Pages open at once in the run's browser (the others wait): each is a renderer's memory.
    pages_at_once: int = 4
    # Methods besides GET and HEAD (always sent) a page's scripts may send through the gate, to
    # the page's own origin (its GraphQL and JSON APIs load content by POST) and to other
    # origins (off: a public page's script posting elsewhere is a write the task never asked
    # for). A method not listed is refused unsent, named in the step's `refusals`.
    script_methods: tuple[str, ...] = ("POST", "PUT", "PATCH", "DELETE")
    script_methods_other_origins: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("timeout_seconds", "pages_per_context", "pages_at_once"):
            if getattr(self, name) <= 0:
                raise ValueError(f"render {name} must be positive, got {getattr(self, name)}")
        if self.settle_seconds < 0:
            raise ValueError(f"render settle_seconds must be >= 0, got {self.settle_seconds}")
        # Upper-case, as browsers send them (GET and HEAD, always sent, are allowed too).
        known = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")
        for name in ("script_methods", "script_methods_other_origins"):
            unknown = [method for method in getattr(self, name) if method not in known]
            if unknown:
                raise ValueError(
                    f"render_{name}: unknown method {unknown[0]!r} (one of {', '.join(known)})"
                )


@dataclass(frozen=True, slots=True)
class RevisitSettings:
    """How `pages` learns when each page changes (`engine.revisit`)."""

    # Off: no digest, revisit state, `changes` row or kept body (a one-off bulk scrape saves
    # ~0.16 ms of CPU and ~630 bytes per task, 5% of the chain's tasks/s at 10,000 tasks;
    # `scrapeflow refresh --due` then refreshes by age).
    track: bool = True
    # The adaptive interval's bounds and first value (a task's params may set its own).
    policy: RevisitPolicy = field(default_factory=RevisitPolicy)
    # Regexes of text that never counts as a change (dates, clock times, view counters).
    change_ignore: tuple[str, ...] = DEFAULT_NOISE
    # Earlier bodies kept per task, for the text diff of a change (`<key>.scrape.1`, ...): 1,
    # the default, keeps the body before the current one, replaced only when a body differs.
    bodies_kept: int = 1
    # What the change digest is of (`DIGEST_BASES`): the whole text, or the main content (with
    # `page_main_content`: on pages whose chrome differs on every request it found no false
    # change where the whole text found one at every fetch; docs/refresh.md).
    digest_basis: str = "text"

    def __post_init__(self) -> None:
        noise_pattern(tuple(self.change_ignore))  # raises naming a bad pattern
        if self.bodies_kept < 0:
            raise ValueError(f"revisit_bodies_kept must not be negative, got {self.bodies_kept}")
        if self.digest_basis not in DIGEST_BASES:
            raise ValueError(
                f"change_digest must be one of {', '.join(DIGEST_BASES)}, got {self.digest_basis!r}"
            )


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When and how a request is tried again.

    Target errors (transient: connection errors, timeouts, 5xx, 408, 429) and proxy errors
    (the proxy failed, or the page was a block page seen through it) have separate budgets, so a
    bad proxy pool cannot use up the tries a flaky site needs, and the other way round.
    """

    max_attempts: int = 4  # tries of one request for transient target errors, the first included
    max_proxy_attempts: int = 3  # extra tries through another proxy after proxy errors or blocks
    backoff_base_seconds: float = 0.5  # delay before the 2nd try; doubles each time
    backoff_max_seconds: float = 10.0
    retry_after_max_seconds: float = 30.0  # Retry-After is honoured up to this
    block_status_codes: tuple[int, ...] = (403,)  # answers that mean "you are blocked"
    ok_status_codes: tuple[int, ...] = (200,)  # scrapeflow: any other final status is an error


@dataclass(frozen=True, slots=True)
class PoliteSettings:
    """robots.txt and per-host limits; they hold across runs sharing a data folder on one machine.

    The delay between request starts at one host is the larger of `per_host_delay_seconds`
    and the host's robots.txt `Crawl-delay` for our User-Agent.

    Raises:
        ValueError: naming the setting when a number is negative.
    """

    respect_robots_txt: bool = DEFAULT_RESPECT_ROBOTS_TXT
    robots_max_age_seconds: float = DEFAULT_ROBOTS_MAX_AGE_SECONDS
    max_per_host: int = DEFAULT_MAX_PER_HOST  # 0: no per-host limit
    per_host_delay_seconds: float = DEFAULT_PER_HOST_DELAY_SECONDS
    robots_timeout_seconds: float = 10.0  # fetching one robots.txt, connect to last byte
    robots_max_bytes: int = 512 * 1024  # RFC 9309 asks parsers to read at least 500 KiB
    # A Redis URL: per-host slots and delays hold across machines (workers that share no file
    # system); None: across the processes of this machine (lock files in the data folder).
    shared_limits_url: str | None = None

    def __post_init__(self) -> None:
        for name in (
            "robots_max_age_seconds",
            "max_per_host",
            "per_host_delay_seconds",
            "robots_timeout_seconds",
            "robots_max_bytes",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, got {getattr(self, name)}")


@dataclass(frozen=True, slots=True)
class SitemapSettings:
    """What one sitemap reading (`engine.crawl.sitemaps`) may cost, whatever the files say.

    A sitemap may name entries on any number of other origins; each one costs a DNS lookup of
    its host (the address guard) and a read of its robots.txt (sitemaps.org cross-submission).
    The origins of the seeds and of the sitemaps given, and those a file already lists, cost
    nothing; past the cap, entries on further origins are skipped as `over_budget` (counted,
    as a frontier row each, and named in a problem of the reading), never looked up.

    Raises:
        ValueError: naming the setting when a number is negative.
    """

    # The other origins one reading looks up and asks robots.txt of (1,000 sitemap files of
    # 50,000 entries each would otherwise be 50 million of each).
    max_other_origins_per_reading: int = DEFAULT_MAX_OTHER_ORIGINS_PER_READING

    def __post_init__(self) -> None:
        if self.max_other_origins_per_reading < 0:
            raise ValueError(
                "sitemap max_other_origins_per_reading must not be negative, "
                f"got {self.max_other_origins_per_reading}"
            )


@dataclass(frozen=True, slots=True)
class ScrapeSettings:
    """Per-request limits for the `scrape` executors."""

    request_timeout_seconds: float = 10.0  # one try, connect to last byte
    max_body_bytes: int = 20 * 1024 * 1024  # a larger body fails the task (BodyTooLargeError)
    verify_tls: bool = True  # a task's params may turn it off with "verify_tls": false
    user_agent: str = field(default_factory=lambda: DEFAULT_USER_AGENT)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    polite: PoliteSettings = field(default_factory=PoliteSettings)
    max_redirects: int = 10  # hops followed per request; one more fails the task (permanent)
    # Requests from a task whose URL is public never reach a loopback, private, link-local,
    # multicast or reserved address (checked on the resolved IP at connect time) ...
    address_guard: bool = True
    # ... except in these networks (CIDR strings, e.g. "10.1.0.0/16").
    allowed_networks: tuple[str, ...] = ()
    # `pages` keeps each page's readable text up to this many characters (0, the default: no
    # text; on 20 KB pages text cost 2.7 ms of CPU and 19.6 KB of status file per page) ...
    page_text_max_chars: int = 0
    # ... and its Markdown too (the `markdown` extra; 7 ms and 19.8 KB more per 20 KB page).
    page_markdown: bool = False
    # `pages` keeps each page's main content (menus, footers, banners left out) as text and
    # Markdown, with its metadata (the `content` extra; docs/main-content.md): cut at
    # `page_text_max_chars` when that is set, else at `MAIN_CONTENT_MAX_CHARS`. Off by default,
    # as it costs ~3-45 ms of CPU per page (trafilatura: 5 KB pages to real news pages).
    page_main_content: bool = False
    # DuckDB's step runs, changes and spool files' names older than this many days are deleted
    # by the first run of each day (each task's current state stays; docs/duckdb.md). 0, the
    # default: kept for good (a daily refresh of a million tasks adds ~3 million rows a day).
    history_keep_days: float = 0.0
    # The `render` step's browser (tasks marked `render: true`; the `browser` extra).
    render: RenderSettings = field(default_factory=RenderSettings)
    # What `pages` learns about each page's changes, and the bodies kept to diff them.
    revisit: RevisitSettings = field(default_factory=RevisitSettings)
    # What one sitemap reading may cost (`crawl --sitemap`, robots.txt `Sitemap:` lines).
    sitemaps: SitemapSettings = field(default_factory=SitemapSettings)

    def __post_init__(self) -> None:
        if self.revisit.digest_basis == "main_content" and not self.page_main_content:
            raise ValueError("change_digest: main_content needs page_main_content on")
