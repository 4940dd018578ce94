"""`/sitemaps/`: a sitemap index naming an XML sitemap and a gzipped one, which list graph pages
(one with an escape in its query, kept as written) with and without `lastmod`.

robots.txt announces the index (`Sitemap:` line) only when the site is built with
`sitemap_in_robots`, so crawls of the graph elsewhere see no sitemap. `POST
/control/lastmod?path=P&lastmod=D` dates a listed page anew (as a site does when the page
changes), for the site's life.
"""

import gzip

from aiohttp import web

from scrapeflow_dagster.site.content.pages import SITEMAP_NS

INDEX_PATH = "/sitemaps/index.xml"
# (path as the sitemap lists it, lastmod or None), per file of the index.
PLAIN = (("/graph/1", "2026-11-01"), ("/graph/2?ref=%28map%29", None))
GZIPPED = (("/graph/3", "2026-10-31T12:00:00+00:00"),)


LASTMODS: web.AppKey[dict[str, str]] = web.AppKey("sitemap_lastmods", dict)


def _urlset(request: web.Request, entries: tuple[tuple[str, str | None], ...]) -> str:
    dated = request.app[LASTMODS]
    urls = "".join(
        f"<url><loc>http://{request.host}{path}</loc>"
        + (f"<lastmod>{lastmod}</lastmod>" if (lastmod := dated.get(path, given)) else "")
        + "</url>"
        for path, given in entries
    )
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {SITEMAP_NS}>{urls}</urlset>\n'


async def index(request: web.Request) -> web.Response:
    """The sitemap index: `plain.xml` and `gzipped.xml.gz`."""
    subs = "".join(
        f"<sitemap><loc>http://{request.host}/sitemaps/{name}</loc></sitemap>"
        for name in ("plain.xml", "gzipped.xml.gz")
    )
    text = (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex {SITEMAP_NS}>{subs}'
        "</sitemapindex>\n"
    )
    return web.Response(text=text, content_type="application/xml")


async def plain(request: web.Request) -> web.Response:
    """An XML sitemap."""
    return web.Response(text=_urlset(request, PLAIN), content_type="application/xml")


async def gzipped(request: web.Request) -> web.Response:
    """A gzipped XML sitemap, served as a gzip file (no Content-Encoding)."""
    body = gzip.compress(_urlset(request, GZIPPED).encode())
    return web.Response(body=body, content_type="application/gzip")


async def lastmod_control(request: web.Request) -> web.Response:
    """Date the listed page `path` anew with `lastmod` (400 when either is missing or the path
    is not listed)."""
    path, lastmod = request.query.get("path"), request.query.get("lastmod")
    if path not in {p for p, _ in (*PLAIN, *GZIPPED)} or not lastmod:
        raise web.HTTPBadRequest(text="give path (a listed page) and lastmod")
    request.app[LASTMODS][path] = lastmod
    return web.json_response({"path": path, "lastmod": lastmod})
