"""Sitemaps as seeds: `sitemap.xml` files (index files followed, gzip read) and the `Sitemap:`
lines of robots.txt, parsed by `ultimate-sitemap-parser` (XML, text and feed sitemaps).

Every file, and every robots.txt asked, is fetched through the gate (`engine.gate`), as a
task's page is: the address guard, robots.txt, host slots and delays, redirects checked hop by
hop, the body cap, the proxy (`sitemap_robots`). Each URL a sitemap gives inherits the trust
of what gave it (`state.trust`): a sitemap fetched from a public address lists public pages
only, so an entry or child on an internal address is refused (`refused_address`); a robots.txt
`Sitemap:` line, the trust of robots.txt's final answer (a seed's robots.txt redirected to a
public host announces public sitemaps). Nothing but http(s) is fetched: an entry in another
scheme (`file:`, `ftp:`, `gopher:`, `data:`) is skipped (`out_of_scope`).

A file read is kept (`sitemap_cache`) and not asked again while younger than
`robots_max_age_seconds` (unless `reread`), then asked conditionally: a crawl run again is
silent.

The sitemaps.org host rule: the entries and child sitemaps of a file must be on its own site
(`site_of`: host and port), unless the robots.txt of the entry's origin announces the file (or
an index above it): cross-submission. The others are skipped (`other_host`), never fetched.
The host rule is applied before the guard looks an entry's host up: an origin a file does not
list costs one lookup and one robots.txt read, and one reading looks at no more than
`max_other_origins_per_reading` (`SitemapSettings`) of them; entries on the others are skipped
(`over_budget`).
"""

import dataclasses
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import aiohttp
from yarl import URL

from scrapeflow_dagster.engine.crawl.scope import OUT_OF_SCOPE, OVER_BUDGET
from scrapeflow_dagster.engine.crawl.sitemaps.cache import (
    cached_sitemap,
    keep_sitemap,
    touch_sitemap,
)
from scrapeflow_dagster.engine.crawl.sitemaps.robots import Announced, read_announced
from scrapeflow_dagster.engine.crawl.sitemaps.urls import FETCHED_SCHEMES, fetchable_url, site_of
from scrapeflow_dagster.engine.errors import AddressRefusedError, ScrapeError
from scrapeflow_dagster.engine.gate.fetch import fetch
from scrapeflow_dagster.engine.gate.hops import NOT_MODIFIED
from scrapeflow_dagster.engine.polite.addresses import GuardedResolver
from scrapeflow_dagster.engine.polite.robots import origin_of
from scrapeflow_dagster.engine.redact import redact
from scrapeflow_dagster.engine.run.context import Context
from scrapeflow_dagster.engine.state.trust import PUBLIC, TRUST, inherited_trust
from scrapeflow_dagster.engine.tasks.urls import request_url

# Index files may nest; a site's sitemaps are read up to this many files in all.
MAX_SITEMAPS = 1000
_GZIP_MAGIC = b"\x1f\x8b"
# What happened to a URL a sitemap gave (beside the frontier's outcomes, `crawl.scope`).
LISTED = "added"  # a page: it becomes a seed (or is one already)
OTHER_HOST = "other_host"  # on another origin, not cross-submitted: skipped
REFUSED_ADDRESS = "refused_address"  # on an internal address, learned from a public source
# Also `OUT_OF_SCOPE` (not http(s)) and `OVER_BUDGET` (past `max_other_origins_per_reading`).


@dataclass(frozen=True)
class SitemapPage:
    """A page a sitemap lists: its URL as written there, its `lastmod`, the sitemap that
    listed it and the trust it inherits (`state.trust`)."""

    url: str
    lastmod: datetime | None
    sitemap: str  # the sitemap file that listed it
    trust: str = PUBLIC
    changefreq: str | None = None  # its `changefreq` (hourly, daily, ...), a revisit hint


@dataclass(frozen=True)
class Skipped:
    """A URL a sitemap (or robots.txt) gave that is not followed, and why."""

    url: str
    sitemap: str  # the file (or robots.txt) that gave it
    outcome: str  # OTHER_HOST, REFUSED_ADDRESS, OUT_OF_SCOPE or OVER_BUDGET
    reason: str


@dataclass
class SitemapReading:
    """What reading some sitemaps found: pages, the files read, what was skipped, and the
    problems met."""

    pages: list[SitemapPage] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


@dataclass(frozen=True)
class _File:
    """A sitemap file to read: its URL, its trust (None: given by the user, its URL decides),
    the files above it (index files) and the origins it may list."""

    url: str
    trust: str | None
    above: tuple[str, ...]
    origins: frozenset[str]  # the sites it may list (`site_of`)

    @property
    def params(self) -> dict[str, Any]:
        """The params it is fetched with (those of a task of its trust)."""
        return {"url": self.url, **({TRUST: self.trust} if self.trust else {})}


class _Reader:
    """One reading: the queue of files, the answers of robots.txt files asked for
    cross-submission, the hosts the guard already judged, the other origins looked at."""

    def __init__(self, context: Context, *, reread: bool = False) -> None:
        self.context = context
        self.reread = reread
        self.reading = SitemapReading()
        self.queue: list[_File] = []
        self.seen: set[str] = set()
        # (origin, trust asked with) -> what its robots.txt announces: one origin's answer is
        # an intranet page for an intranet seed, never for a public one.
        self._announced: dict[tuple[str, str], Announced] = {}
        self._asked: set[str] = set()  # origins whose robots.txt was asked
        self._refused: dict[str, str | None] = {}  # host -> why the guard refuses it
        self._budget = context.settings.sitemaps.max_other_origins_per_reading
        self._others: set[str] = set()  # other origins looked at, within the budget
        self._over_budget = False  # an entry was skipped for the budget (told once)
        self._resolver: GuardedResolver | None = None  # made on first use, closed by `close`

    async def close(self) -> None:
        """Close the resolver the guard's checks used, if any."""
        if self._resolver is not None:
            await self._resolver.close()

    async def announced_by(self, url: URL, params: Mapping[str, Any]) -> Announced:
        """What robots.txt of `url`'s origin announces, read through the gate (and the proxy)
        with the trust of `params` (nothing when it cannot be read: a problem noted)."""
        origin = origin_of(url)
        key = (origin, str(params.get(TRUST)))
        if key in self._announced:
            return self._announced[key]
        found = Announced(frozenset())
        try:
            found = await read_announced(self.context, url, params)
        except (ScrapeError, aiohttp.ClientError, TimeoutError, ValueError) as exc:
            self.reading.problems.append(f"robots.txt of {redact(origin)}: {_why(exc)}")
        self._announced[key] = found
        self._asked.add(origin)
        return found

    def within_budget(self, url: URL) -> bool:
        """Whether the reading may look at `url`'s origin, one its file does not list: free
        when already looked at, else while fewer than the budget were (the first refusal is
        a problem of the reading)."""
        origin = origin_of(url)
        if origin in self._others or origin in self._asked:
            return True
        if len(self._others) < self._budget:
            self._others.add(origin)
            return True
        if not self._over_budget:
            self._over_budget = True
            self.reading.problems.append(
                f"more than {self._budget} other origins named: entries on the rest skipped "
                "(max_other_origins_per_reading)"
            )
        return False

    async def refusal(self, url: URL, trust: str) -> str | None:
        """Why the guard refuses `url` to a source of `trust` (None: it may be fetched). A
        name is resolved as the guarded session resolves it, once per host and reading."""
        guard = self.context.guard
        if trust != PUBLIC or guard is None or not guard.enabled:
            return None
        host = url.raw_host or ""
        if host not in self._refused:
            why: str | None = None
            if self._resolver is None:
                self._resolver = GuardedResolver(guard)
            try:
                with guard.guarding(host, task_internal=False, what=redact(str(url))):
                    await self._resolver.resolve(host, url.port or 0)
            except AddressRefusedError as exc:
                why = str(exc)
            except OSError:
                why = None  # does not resolve: its request fails on its own
            self._refused[host] = why
        return self._refused[host]

    async def judge(
        self, file: _File, raw: str, trust: str, *, host_rule: bool = True
    ) -> URL | None:
        """`raw` (an entry or child of `file`, learned with `trust`) as the URL to request, or
        None when it is skipped (recorded): not http(s), on an origin `file` does not list past
        the reading's budget, refused by the guard, or (`host_rule`) on another origin than
        `file`'s and not cross-submitted by its own robots.txt."""
        try:
            url = request_url(raw)
        except ValueError:
            self.reading.problems.append(f"{redact(file.url)}: {redact(raw)!r} is not a URL")
            return None
        if url.scheme not in FETCHED_SCHEMES or not url.raw_host:
            reason = "not an http(s) URL: never fetched"
            self.reading.skipped.append(Skipped(raw, file.url, OUT_OF_SCOPE, reason))
            return None
        other = site_of(url) not in file.origins
        # Before any lookup: a file naming endless hosts costs no more than the budget.
        if other and not self.within_budget(url):
            reason = f"past {self._budget} other origins in one reading"
            self.reading.skipped.append(Skipped(raw, file.url, OVER_BUDGET, reason))
            return None
        why = await self.refusal(url, trust)
        if why is not None:
            self.reading.skipped.append(Skipped(raw, file.url, REFUSED_ADDRESS, why))
            return None
        if host_rule and other:
            # Cross-submission: robots.txt of the entry's origin announces this file or one
            # above it. That robots.txt is asked with the entry's trust.
            announced = await self.announced_by(url, {"url": str(url), TRUST: trust})
            if not any(name in announced.sitemaps for name in (file.url, *file.above)):
                reason = f"not on {', '.join(sorted(file.origins))} and not cross-submitted"
                self.reading.skipped.append(Skipped(raw, file.url, OTHER_HOST, reason))
                return None
        return url

    async def _text(self, file: _File) -> tuple[str, bool, str] | None:
        """The text of `file` and whether it came from an intranet page: the kept copy while
        it is fresh, else a request through the gate (conditional when a copy is kept); None
        when it cannot be read (a problem noted)."""
        context = self.context
        kept = cached_sitemap(context.dir, file.url, file.trust)
        fresh = context.settings.polite.robots_max_age_seconds
        if kept is not None and not self.reread and kept.age_seconds <= fresh:
            return kept.text, kept.intranet, kept.final_url
        conditional = kept.conditional() if kept is not None else None
        try:
            fetched = await fetch(context, file.params, conditional=conditional)
            if kept is not None and conditional and fetched.status == NOT_MODIFIED:
                touch_sitemap(context.dir, file.url, file.trust, kept)
                return kept.text, kept.intranet, kept.final_url
            cap = context.settings.max_body_bytes
            body = fetched.body
            data = _gunzip(body, cap) if body.startswith(_GZIP_MAGIC) else body
        except (ScrapeError, ValueError) as exc:
            self.reading.problems.append(f"{redact(file.url)}: {_why(exc)}")
            return None
        text = data.decode("utf-8", "replace")
        keep_sitemap(
            context.dir,
            file.url,
            file.trust,
            text=text,
            final_url=fetched.final_url,
            intranet=fetched.intranet,
            headers=fetched.headers,
        )
        return text, fetched.intranet, fetched.final_url

    async def read(self, file: _File) -> None:
        """Read one file (`_text`); queue its children, keep its pages."""
        got = await self._text(file)
        if got is None:
            return
        text, intranet, final_url = got
        self.reading.files.append(file.url)
        # Answered from elsewhere (a redirect the gate let through): that site is its own too.
        file = dataclasses.replace(file, origins=file.origins | {site_of(URL(final_url))})
        trust = inherited_trust(intranet)
        # Imported here, once a sitemap is read: usp (and requests below it) takes ~0.1 s,
        # which a crawl of a site without sitemaps would pay at its start.
        from usp.objects.sitemap import AbstractIndexSitemap, AbstractPagesSitemap
        from usp.tree import sitemap_from_str

        parsed = sitemap_from_str(text)
        if isinstance(parsed, AbstractIndexSitemap):
            for sub in parsed.sub_sitemaps:
                url = await self.judge(file, sub.url, trust)
                if url is not None and sub.url not in self.seen:
                    origins = file.origins | {site_of(url)}
                    self.queue.append(_File(sub.url, trust, (*file.above, file.url), origins))
        elif isinstance(parsed, AbstractPagesSitemap):
            for page in parsed.pages:
                if await self.judge(file, page.url, trust) is not None:
                    frequency = page.change_frequency
                    self.reading.pages.append(
                        SitemapPage(
                            page.url,
                            page.last_modified,
                            file.url,
                            trust,
                            frequency.value if frequency is not None else None,
                        )
                    )
        else:
            self.reading.problems.append(f"{redact(file.url)}: not a sitemap")


async def read_sitemaps(
    context: Context,
    sitemaps: Sequence[str],
    *,
    robots_of: Sequence[Mapping[str, Any]] = (),
    max_sitemaps: int = MAX_SITEMAPS,
    reread: bool = False,
) -> SitemapReading:
    """Fetch and parse `sitemaps` (given by the user: their own URL decides their trust) and
    those the robots.txt of the origin of each seed of `robots_of` (task params) announces;
    index files are followed (each file once), everything through the gate of `context`
    (`gate.opening.open_gate`).

    A file that cannot be fetched or parsed is a problem of the reading, named by URL; it
    never stops the others. Entries and children that break the host rule or the guard are
    `skipped`, never fetched. With `reread`, a file whose copy is still fresh is asked again
    (conditionally) all the same.
    """
    reader = _Reader(context, reread=reread)
    try:
        await _read_all(reader, sitemaps, robots_of, max_sitemaps)
    finally:
        await reader.close()
    return reader.reading


async def _read_all(
    reader: _Reader,
    sitemaps: Sequence[str],
    robots_of: Sequence[Mapping[str, Any]],
    max_sitemaps: int,
) -> None:
    for url in dict.fromkeys(sitemaps):
        try:
            site = site_of(fetchable_url(url))
        except ValueError as exc:
            reader.reading.problems.append(f"{redact(url)!r} {exc}")
            continue
        reader.queue.append(_File(url, None, (), frozenset({site})))
    for params in robots_of:
        await _queue_announced(reader, params)
    while reader.queue and len(reader.seen) < max_sitemaps:
        file = reader.queue.pop(0)
        if file.url in reader.seen:
            continue
        reader.seen.add(file.url)
        await reader.read(file)
    if reader.queue:
        reader.reading.problems.append(f"more than {max_sitemaps} sitemap files: the rest unread")


async def _queue_announced(reader: _Reader, seed: Mapping[str, Any]) -> None:
    """Queue the sitemaps the robots.txt of `seed`'s origin announces, with the trust of its
    final answer: public unless the seed is an intranet task and every hop of robots.txt was
    answered from an internal address. A robots.txt may announce sitemaps on any host (that is
    how they are cross-submitted): the guard and the reading's budget judge them; the host rule
    applies to what they list."""
    try:
        url = fetchable_url(str(seed.get("url")))
    except ValueError as exc:
        reader.reading.problems.append(f"seed {redact(str(seed.get('url')))!r}: {exc}")
        return
    found = await reader.announced_by(url, seed)
    trust = inherited_trust(found.intranet)
    robots = _File(f"{origin_of(url)}/robots.txt", trust, (), frozenset({site_of(url)}))
    for announced in sorted(found.sitemaps):
        target = await reader.judge(robots, announced, trust, host_rule=False)
        if target is not None:
            origins = frozenset({site_of(url), site_of(target)})
            reader.queue.append(_File(announced, trust, (), origins))


def _why(exc: BaseException) -> str:
    return redact(str(exc)) or type(exc).__name__


def _gunzip(body: bytes, cap: int) -> bytes:
    """`body` decompressed, refused past `cap` bytes (a gzip bomb stops there)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    data = inflater.decompress(body, cap + 1)
    if len(data) > cap or inflater.unconsumed_tail:
        raise ValueError(f"gzip body is over the cap of {cap} bytes decompressed")
    return data
