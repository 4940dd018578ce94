"""`ScrapeSettingsResource`: how every executor run fetches (concurrency, timeouts, retries,
body cap, TLS, politeness, rendering, revisits), as typed fields that build the engine's
`ScrapeSettings`."""

import importlib.util
from collections.abc import Sequence

import dagster as dg
from pydantic import Field

from scrapeflow_dagster.broker import configured_broker
from scrapeflow_dagster.engine.content import CONTENT_EXTRA
from scrapeflow_dagster.engine.polite.addresses import parse_networks
from scrapeflow_dagster.engine.revisit.rule import RevisitPolicy
from scrapeflow_dagster.engine.settings import (
    DEFAULT_MAX_PARALLELISM,
    DEFAULT_TIMEOUT_SECONDS,
    MARKDOWN_EXTRA,
    PoliteSettings,
    RenderSettings,
    RetryPolicy,
    RevisitSettings,
    ScrapeSettings,
    SitemapSettings,
)
from scrapeflow_dagster.lib.resources import check_bounds

# Every default below is the engine's own (one source: engine.settings and its dataclasses).
_SETTINGS = ScrapeSettings()
_POLICY = _SETTINGS.retry
_POLITE = _SETTINGS.polite
_RENDER = _SETTINGS.render
_SITEMAPS = _SETTINGS.sitemaps
_REVISIT = _SETTINGS.revisit


class ScrapeSettingsResource(dg.ConfigurableResource):
    """Concurrency, timeouts, retries, body cap, TLS verification and politeness of every
    executor run.

    Politeness holds across runs sharing the data folder on one machine: robots.txt is read
    once per host and cached (`robots_max_age_seconds`), disallowed URLs end `disallowed`
    without a request; at most `max_per_host` requests are in flight per host:port (0: no
    limit), `per_host_delay_seconds` (or robots.txt's longer `Crawl-delay`) apart.
    """

    max_parallelism: int = DEFAULT_MAX_PARALLELISM
    executor_timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    request_timeout_seconds: float = _SETTINGS.request_timeout_seconds
    max_attempts: int = _POLICY.max_attempts
    max_proxy_attempts: int = _POLICY.max_proxy_attempts
    backoff_base_seconds: float = _POLICY.backoff_base_seconds
    backoff_max_seconds: float = _POLICY.backoff_max_seconds
    retry_after_max_seconds: float = _POLICY.retry_after_max_seconds
    max_body_bytes: int = _SETTINGS.max_body_bytes
    verify_tls: bool = _SETTINGS.verify_tls
    user_agent: str = _SETTINGS.user_agent  # sent with every request
    block_status_codes: list[int] = Field(default_factory=lambda: list(_POLICY.block_status_codes))
    respect_robots_txt: bool = _POLITE.respect_robots_txt
    # Then robots.txt is re-read.
    robots_max_age_seconds: float = _POLITE.robots_max_age_seconds
    # Requests in flight per host:port, across runs (0: no limit).
    max_per_host: int = _POLITE.max_per_host
    # Between request starts at one host.
    per_host_delay_seconds: float = _POLITE.per_host_delay_seconds
    # Redirect hops followed per request (each passes robots.txt, host limits and scope).
    max_redirects: int = _SETTINGS.max_redirects
    # A task whose URL is public never reaches a loopback, private, link-local, multicast or
    # reserved address (resolved IP, checked at connect time); false turns the guard off.
    address_guard: bool = _SETTINGS.address_guard
    # Networks the guard lets public tasks reach anyway (CIDR, e.g. "10.1.0.0/16").
    address_guard_allow: list[str] = Field(default_factory=list)
    # Other origins one sitemap reading looks up and asks robots.txt of (the rest skipped).
    sitemap_max_other_origins: int = _SITEMAPS.max_other_origins_per_reading
    # A Redis URL through which per-host slots and delays hold across machines; None: the
    # Celery broker when the home's runs use Celery workers, else this machine only.
    shared_host_limits_url: str | None = None
    # `pages` keeps each page's readable text up to this many characters (0, the default: none),
    # and its Markdown too when `page_markdown` (the `markdown` extra); docs/duckdb.md.
    page_text_max_chars: int = _SETTINGS.page_text_max_chars
    page_markdown: bool = _SETTINGS.page_markdown
    # `pages` keeps each page's main content and metadata too (the `content` extra; table
    # `main_content`, docs/main-content.md), cut at `page_text_max_chars` when that is set.
    page_main_content: bool = _SETTINGS.page_main_content
    # DuckDB's history (step runs, changes) older than this many days is deleted by the first
    # run of each day; each task's current state stays (0: kept for good).
    history_keep_days: float = _SETTINGS.history_keep_days
    # The `render` step's browser (tasks marked `render: true`; the `browser` extra and
    # SCRAPEFLOW_RENDER=1): the system's Chromium, what its pages may not request, how long a
    # page may take to load and then to settle, and how many pages a browser context serves.
    render_chromium_path: str = _RENDER.chromium_path
    render_blocked_resources: list[str] = Field(
        default_factory=lambda: list(_RENDER.blocked_resources)
    )
    render_timeout_seconds: float = _RENDER.timeout_seconds
    render_settle_seconds: float = _RENDER.settle_seconds
    render_pages_per_context: int = _RENDER.pages_per_context
    render_pages_at_once: int = _RENDER.pages_at_once
    # Methods besides GET and HEAD a rendered page's scripts may send through the gate: to the
    # page's own origin, and to other origins (none by default); others are refused unsent.
    render_script_methods: list[str] = Field(default_factory=lambda: list(_RENDER.script_methods))
    render_script_methods_other_origins: list[str] = Field(
        default_factory=lambda: list(_RENDER.script_methods_other_origins)
    )
    # How `pages` learns when each page changes (docs/refresh.md): the revisit interval's
    # bounds and first value (seconds; a task's params may set its own), the text that never
    # counts as a change (regexes), and the earlier bodies kept per task to diff a change.
    revisit_track: bool = _REVISIT.track
    revisit_min_seconds: float = _REVISIT.policy.min_seconds
    revisit_max_seconds: float = _REVISIT.policy.max_seconds
    revisit_initial_seconds: float = _REVISIT.policy.initial_seconds
    change_ignore: list[str] | None = None  # None: dates, clock times, view counters
    change_ignore_extra: list[str] = Field(default_factory=list)  # more, kept with those
    revisit_bodies_kept: int = _REVISIT.bodies_kept
    # What the change digest is of: "text" (the whole page's) or "main_content" (its main
    # content: needs page_main_content; for pages whose menus or "related" boxes differ on
    # every request, docs/refresh.md).
    change_digest: str = _REVISIT.digest_basis

    def build(self) -> ScrapeSettings:
        """The engine settings these fields describe.

        Raises:
            ValueError: naming the field when a number is out of bounds (a 0 parallelism or
                timeout would be ignored, a 0-byte body cap would fail every task).
        """
        check_bounds(
            self,
            positive=(
                "max_parallelism",
                "executor_timeout_seconds",
                "request_timeout_seconds",
                "max_attempts",
                "max_body_bytes",
            ),
            not_negative=(
                "max_redirects",
                "max_proxy_attempts",
                "backoff_base_seconds",
                "backoff_max_seconds",
                "retry_after_max_seconds",
                "page_text_max_chars",
                "history_keep_days",
            ),  # the politeness numbers: `PoliteSettings` checks them
        )
        if self.page_markdown and importlib.util.find_spec("markdownify") is None:
            raise ValueError(f"page_markdown needs markdownify: {MARKDOWN_EXTRA}")
        if self.page_main_content and not all(
            importlib.util.find_spec(name) for name in ("trafilatura", "markdownify")
        ):
            raise ValueError(f"page_main_content needs trafilatura: {CONTENT_EXTRA}")
        return ScrapeSettings(
            request_timeout_seconds=self.request_timeout_seconds,
            max_body_bytes=self.max_body_bytes,
            verify_tls=self.verify_tls,
            user_agent=self.user_agent,
            max_redirects=self.max_redirects,
            address_guard=self.address_guard,
            allowed_networks=_networks(self.address_guard_allow),
            page_text_max_chars=self.page_text_max_chars,
            page_markdown=self.page_markdown,
            page_main_content=self.page_main_content,
            history_keep_days=self.history_keep_days,
            sitemaps=SitemapSettings(max_other_origins_per_reading=self.sitemap_max_other_origins),
            render=RenderSettings(
                chromium_path=self.render_chromium_path,
                blocked_resources=tuple(self.render_blocked_resources),
                timeout_seconds=self.render_timeout_seconds,
                settle_seconds=self.render_settle_seconds,
                pages_per_context=self.render_pages_per_context,
                pages_at_once=self.render_pages_at_once,
                script_methods=tuple(self.render_script_methods),
                script_methods_other_origins=tuple(self.render_script_methods_other_origins),
            ),
            revisit=RevisitSettings(
                track=self.revisit_track,
                policy=RevisitPolicy(
                    min_seconds=self.revisit_min_seconds,
                    max_seconds=self.revisit_max_seconds,
                    initial_seconds=self.revisit_initial_seconds,
                ),
                change_ignore=(
                    *(_REVISIT.change_ignore if self.change_ignore is None else self.change_ignore),
                    *self.change_ignore_extra,
                ),
                bodies_kept=self.revisit_bodies_kept,
                digest_basis=self.change_digest,
            ),
            retry=RetryPolicy(
                max_attempts=self.max_attempts,
                max_proxy_attempts=self.max_proxy_attempts,
                backoff_base_seconds=self.backoff_base_seconds,
                backoff_max_seconds=self.backoff_max_seconds,
                retry_after_max_seconds=self.retry_after_max_seconds,
                block_status_codes=tuple(self.block_status_codes),
            ),
            polite=PoliteSettings(
                respect_robots_txt=self.respect_robots_txt,
                robots_max_age_seconds=self.robots_max_age_seconds,
                max_per_host=self.max_per_host,
                per_host_delay_seconds=self.per_host_delay_seconds,
                shared_limits_url=self.shared_host_limits_url or configured_broker(),
            ),
        )


def _networks(texts: Sequence[str]) -> tuple[str, ...]:
    """`address_guard_allow`, checked.

    Raises:
        ValueError: naming the field and the entry that is no network.
    """
    try:
        parse_networks(texts)
    except ValueError as exc:
        raise ValueError(f"address_guard_allow: {exc}") from None
    return tuple(texts)
