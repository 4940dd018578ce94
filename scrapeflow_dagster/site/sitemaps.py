"""`/sitemaps/`: a sitemap index naming an XML sitemap and a gzipped one, which list graph pages
(one with an escape in its query, kept as written) with and without `lastmod`.

robots.txt announces the index (`Sitemap:` line) only when the site is built with
`sitemap_in_robots`, so crawls of the graph elsewhere see no sitemap.
"""

import gzip

from aiohttp import web

INDEX_PATH = "/sitemaps/index.xml"
# (path as the sitemap lists it, lastmod or None), per file of the index.
PLAIN = (("/graph/1", "2026-11-01"), ("/graph/2?ref=%28map%29", None))
GZIPPED = (("/graph/3", "2026-10-31T12:00:00+00:00"),)
_NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def _urlset(host: str, entries: tuple[tuple[str, str | None], ...]) -> str:
    urls = "".join(
        f"<url><loc>http://{host}{path}</loc>"
        + (f"<lastmod>{lastmod}</lastmod>" if lastmod else "")
        + "</url>"
        for path, lastmod in entries
    )
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {_NS}>{urls}</urlset>\n'


async def index(request: web.Request) -> web.Response:
    """The sitemap index: `plain.xml` and `gzipped.xml.gz`."""
    subs = "".join(
        f"<sitemap><loc>http://{request.host}/sitemaps/{name}</loc></sitemap>"
        for name in ("plain.xml", "gzipped.xml.gz")
    )
    text = f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex {_NS}>{subs}</sitemapindex>\n'
    return web.Response(text=text, content_type="application/xml")


async def plain(request: web.Request) -> web.Response:
    """An XML sitemap."""
    return web.Response(text=_urlset(request.host, PLAIN), content_type="application/xml")


async def gzipped(request: web.Request) -> web.Response:
    """A gzipped XML sitemap, served as a gzip file (no Content-Encoding)."""
    body = gzip.compress(_urlset(request.host, GZIPPED).encode())
    return web.Response(body=body, content_type="application/gzip")
