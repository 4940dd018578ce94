"""Sitemaps as seeds: `sitemap.xml` files (index files followed, gzip read) and the `Sitemap:`
lines of robots.txt, parsed by `ultimate-sitemap-parser` (XML, text and feed sitemaps); the
fetching is ours (this project's User-Agent, a body cap, one request at a time).
"""

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import aiohttp
from protego import Protego
from yarl import URL

from scrapeflow_dagster.engine.redact import redact
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.tasks.urls import request_url

# Index files may nest; a site's sitemaps are read up to this many files in all.
MAX_SITEMAPS = 1000
_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class SitemapPage:
    """A page a sitemap lists: its URL as written there and its `lastmod`, if any."""

    url: str
    lastmod: datetime | None
    sitemap: str  # the sitemap file that listed it


@dataclass
class SitemapReading:
    """What reading some sitemaps found: pages, the files read, and the problems met."""

    pages: list[SitemapPage] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


async def read_sitemaps(
    sitemaps: Sequence[str],
    *,
    robots_of: Sequence[str] = (),
    settings: ScrapeSettings | None = None,
    max_sitemaps: int = MAX_SITEMAPS,
) -> SitemapReading:
    """Fetch and parse `sitemaps`, and those the robots.txt of each of the origins of
    `robots_of` (seed URLs) announce; index files are followed (each file once).

    A file that cannot be fetched or parsed is a problem of the reading, named by URL; it
    never stops the others.
    """
    settings = settings or ScrapeSettings()
    reading = SitemapReading()
    timeout = aiohttp.ClientTimeout(total=settings.request_timeout_seconds)
    headers = {"User-Agent": settings.user_agent}
    async with aiohttp.ClientSession(headers=headers, timeout=timeout) as session:
        queue = list(dict.fromkeys(sitemaps))
        for origin in dict.fromkeys(_origin(url) for url in robots_of):
            queue += await _announced(session, origin, settings, reading)
        seen: set[str] = set()
        while queue and len(seen) < max_sitemaps:
            url = queue.pop(0)
            if url in seen:
                continue
            seen.add(url)
            text = await _fetch_text(session, url, settings, reading)
            if text is None:
                continue
            reading.files.append(url)
            # Imported here, once a sitemap is read: usp (and requests below it) takes
            # ~0.1 s, which a crawl of a site without sitemaps would pay at its start.
            from usp.objects.sitemap import AbstractIndexSitemap, AbstractPagesSitemap
            from usp.tree import sitemap_from_str

            parsed = sitemap_from_str(text)
            if isinstance(parsed, AbstractIndexSitemap):
                queue += [sub.url for sub in parsed.sub_sitemaps if sub.url not in seen]
            elif isinstance(parsed, AbstractPagesSitemap):
                reading.pages += [
                    SitemapPage(page.url, page.last_modified, url) for page in parsed.pages
                ]
            else:
                reading.problems.append(f"{redact(url)}: not a sitemap")
        if queue:
            reading.problems.append(f"more than {max_sitemaps} sitemap files: the rest unread")
    return reading


def _origin(url: str) -> str:
    parsed = URL(url)
    return f"{parsed.scheme}://{parsed.raw_authority}"


async def _announced(
    session: aiohttp.ClientSession, origin: str, settings: ScrapeSettings, reading: SitemapReading
) -> list[str]:
    """The sitemaps robots.txt of `origin` announces (none when it has none or is missing)."""
    text = await _fetch_text(session, f"{origin}/robots.txt", settings, reading, quiet=True)
    return list(Protego.parse(text).sitemaps) if text else []


async def _fetch_text(
    session: aiohttp.ClientSession,
    url: str,
    settings: ScrapeSettings,
    reading: SitemapReading,
    *,
    quiet: bool = False,
) -> str | None:
    """The body of `url` as text (gunzipped when it is gzip), None on any failure (noted in
    `reading` unless `quiet`)."""
    cap = settings.max_body_bytes
    try:
        async with session.get(request_url(url)) as response:
            if response.status != 200:
                raise ValueError(f"HTTP response {response.status}")
            body = bytearray()
            async for chunk in response.content.iter_chunked(64 * 1024):
                body += chunk
                if len(body) > cap:
                    raise ValueError(f"body is over the cap of {cap} bytes")
        data = _gunzip(bytes(body), cap) if body.startswith(_GZIP_MAGIC) else bytes(body)
        return data.decode("utf-8", "replace")
    except (aiohttp.ClientError, TimeoutError, ValueError, OSError) as exc:
        if not quiet:
            reading.problems.append(f"{redact(url)}: {redact(str(exc)) or type(exc).__name__}")
        return None


def _gunzip(body: bytes, cap: int) -> bytes:
    """`body` decompressed, refused past `cap` bytes (a gzip bomb stops there)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    data = inflater.decompress(body, cap + 1)
    if len(data) > cap or inflater.unconsumed_tail:
        raise ValueError(f"gzip body is over the cap of {cap} bytes decompressed")
    return data
