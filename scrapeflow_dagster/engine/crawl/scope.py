"""What discovery does with one link: the rules as plain functions (scope, patterns, depth,
dedupe, budget), in the order they are applied.

    out_of_scope  not an http(s) URL, another host (or registered domain), or no `allow` match
    denied        matches a `deny` pattern
    known         a task with the same request fingerprint exists already
    too_deep      the child would be more than `max_depth` hops from the seed
    disallowed    a fresh robots.txt the runs cached disallows it for our User-Agent (no cache:
                  judged on, the run checks robots.txt before fetching)
    over_budget   the crawl holds `max_pages` tasks already
    added         a new task
"""

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from yarl import URL

from scrapeflow_dagster.engine.errors import InvalidTaskError
from scrapeflow_dagster.engine.state.params import CrawlSettings, crawl_settings
from scrapeflow_dagster.engine.tasks.keys import LinkIdentity, link_identity

if TYPE_CHECKING:
    import tldextract

ADDED = "added"
KNOWN = "known"
OUT_OF_SCOPE = "out_of_scope"
TOO_DEEP = "too_deep"
DENIED = "denied"
OVER_BUDGET = "over_budget"
DISALLOWED = "disallowed"


@functools.cache
def _extractor() -> "tldextract.TLDExtract":
    # Imported on first use (only `domain` scopes need it): every code-location load, sensor
    # tick and step process would otherwise pay ~0.3 s for it.
    import tldextract

    # The suffix list bundled with tldextract only: no fetch over the network, no cache file.
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


@functools.cache
def registered_domain(host: str) -> str:
    """The registered domain of `host` (`a.b.example.co.uk` -> `example.co.uk`); an IP address
    or a name without a public suffix (`localhost`) is its own domain."""
    found = _extractor()(host)
    if found.suffix and found.domain:
        return f"{found.domain}.{found.suffix}"
    return host


def in_scope(host: str, *, seed_host: str, scope: str) -> bool:
    """Whether a link to `host` stays in the crawl's `scope` (`host` or `domain`) around the
    host of its seed (ports are ignored, as Scrapy's offsite filter does)."""
    if scope == "domain":
        return registered_domain(host) == registered_domain(seed_host)
    return host == seed_host


@dataclass(frozen=True)
class Rules:
    """The compiled rules of one crawl's settings."""

    settings: CrawlSettings
    allow: tuple[re.Pattern[str], ...]
    deny: tuple[re.Pattern[str], ...]

    @classmethod
    def of(cls, settings: CrawlSettings) -> "Rules":
        """Compile `settings`' patterns (cached per settings: a crawl's tasks share them)."""
        return _compiled(settings)

    def judge(
        self, link: LinkIdentity, *, seed_host: str, child_depth: int, known: bool
    ) -> str | None:
        """The outcome for `link` before the budget is counted: None means it may be added."""
        if not in_scope(link.host, seed_host=seed_host, scope=self.settings.scope):
            return OUT_OF_SCOPE
        if self.allow and not any(p.search(link.url) for p in self.allow):
            return OUT_OF_SCOPE
        if self.deny and any(p.search(link.url) for p in self.deny):
            return DENIED
        if known:
            return KNOWN
        if child_depth > self.settings.max_depth:
            return TOO_DEEP
        return None


@functools.cache
def _compiled(settings: CrawlSettings) -> Rules:
    return Rules(
        settings,
        tuple(re.compile(p) for p in settings.allow),
        tuple(re.compile(p) for p in settings.deny),
    )


def identify(url: object) -> LinkIdentity | None:
    """The canonical URL, fingerprint and key of a link; None for anything but an absolute
    http(s) URL with a host (`ftp:`, `data:`, malformed)."""
    if not isinstance(url, str):
        return None
    try:
        return link_identity(url)
    except InvalidTaskError:
        return None


def redirect_refusal(params: Mapping[str, Any], target: str, target_host: str) -> str | None:
    """Why a crawl task (its `params`) may not follow a redirect to `target` (a host of
    `target_host`), None when it may: out of the crawl's scope around the task's own host, no
    `allow` match, or a `deny` match. A task that is not part of a crawl may follow any.

    Raises:
        ValueError: naming the param when the task's crawl params are invalid.
    """
    settings = crawl_settings(params)
    if settings.max_depth == 0 and settings.crawl is None:
        return None
    own_host = (URL(str(params.get("url"))).host or "").lower()
    if not in_scope(target_host.lower(), seed_host=own_host, scope=settings.scope):
        return f"out of the crawl's scope ({settings.scope} {own_host})"
    rules = Rules.of(settings)
    if rules.allow and not any(p.search(target) for p in rules.allow):
        return "matches no allow pattern of the crawl"
    if any(p.search(target) for p in rules.deny):
        return "matches a deny pattern of the crawl"
    return None
