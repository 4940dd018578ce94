"""`/doors/`: sitemaps that open doors into an internal site, for a public site built with
`internal_base` (the internal site's root, e.g. `http://127.0.0.1:P`, an IPv4 literal).

A crawler that reads a public site's sitemaps must not let them lead it to addresses its address
guard refuses elsewhere (a public page redirecting inside is refused: so must a sitemap entry
be). Every route here is such a door:

    /robots.txt                 also announces `{internal_base}/sitemap.xml` (another host's
                                sitemap) and this site's `/doors/sitemap_index.xml`
    /doors/sitemap_index.xml    a sitemap index of `/doors/pages.xml` (here),
                                `{internal_base}/sitemap.xml` (inside) and `/doors/moved.xml`
                                (here, redirecting inside)
    /doors/moved.xml            302 to `{internal_base}/sitemap.xml`
    /doors/pages.xml            a urlset: this site's `/doors/page/{0,1,2}`, the internal site's
                                pages 1-7 each on another spelling of its address (`spellings`:
                                `127.0.0.1`, `localhost`, `2130706433`, `127.1`, `0x7f.0.0.1`,
                                `0177.0.0.1`, `[::ffff:127.0.0.1]` for loopback), this site's
                                `/hostile/r/to?url={internal_base}/page/8` (a public page that
                                redirects inside) and, when the site has an `other_origin`
                                (another public site), `{other_origin}/page/5`: sitemaps.org
                                lets a sitemap list another host's pages only when that host's
                                robots.txt announces the sitemap (cross-submission)
    /doors/page/{n}             page n of the site (as `/page/{n}`), inside the sitemaps' folder
                                so that sitemaps.org's rule (a sitemap lists URLs under its own
                                folder) admits it

The internal site's `/sitemap.xml` is its every page (see `content.pages`).
"""

import ipaddress
from urllib.parse import quote, urlsplit
from xml.sax.saxutils import escape

from aiohttp import web

from scrapeflow_dagster.site.content.pages import SITEMAP_NS, Pages

PREFIX = "/doors/"
INDEX_PATH = "/doors/sitemap_index.xml"
PAGES_PATH = "/doors/pages.xml"
MOVED_PATH = "/doors/moved.xml"
# The site's own pages `/doors/pages.xml` lists, as `/doors/page/{n}`.
OWN_PAGES = (0, 1, 2)
# The internal page `/hostile/r/to` redirects to, and the other origin's page listed.
REDIRECTED_PAGE = 8
OTHER_ORIGIN_PAGE = 5
INTERNAL_SITEMAP = "/sitemap.xml"


def spellings(address: str) -> list[str]:
    """The ways a URL can spell the IPv4 `address` as its host, each one a resolver or socket
    library takes for that address: dotted, `localhost` (loopback only), a 32-bit integer, the
    two-part `a.b` form, a hex and an octal first byte, and IPv4-mapped IPv6 (bracketed).

    Args:
        address: an IPv4 address in dotted form, e.g. `127.0.0.1`.

    Returns:
        The host spellings, the dotted form first.

    Raises:
        ValueError: when `address` is not a dotted IPv4 address.
    """
    ip = ipaddress.IPv4Address(address)
    a, b, c, d = ip.packed
    named = ["localhost"] if ip == ipaddress.IPv4Address("127.0.0.1") else []
    return [
        str(ip),
        *named,
        str(int(ip)),
        f"{a}.{int(ip) & 0xFFFFFF}",
        f"{a:#x}.{b}.{c}.{d}",
        f"0{a:o}.{b}.{c}.{d}",
        f"[::ffff:{ip}]",
    ]


def _xml(tag: str, entry: str, locs: list[str]) -> web.Response:
    items = "".join(f"<{entry}><loc>{escape(loc)}</loc></{entry}>" for loc in locs)
    text = f'<?xml version="1.0" encoding="UTF-8"?>\n<{tag} {SITEMAP_NS}>{items}</{tag}>\n'
    return web.Response(text=text, content_type="application/xml")


class Doors:
    """The `/doors/` routes of one public site, pointing into `internal_base`."""

    def __init__(self, pages: Pages, internal_base: str, other_origin: str | None = None) -> None:
        """Check `internal_base` and keep what the routes list.

        Args:
            pages: the site's pages (`/doors/page/{n}` serves them).
            internal_base: the internal site's root, `http://ADDRESS:PORT` (IPv4 literal).
            other_origin: another public origin whose page `/doors/pages.xml` lists, if any.

        Raises:
            ValueError: when `internal_base` is not `http(s)://IPv4:PORT` with nothing after.
        """
        wrong = f"internal_base must be http://IPv4:PORT, got {internal_base!r}"
        try:
            parts = urlsplit(internal_base)
            self._hosts = spellings(parts.hostname or "")
            port = parts.port
        except ValueError:
            raise ValueError(wrong) from None
        if parts.scheme not in ("http", "https") or port is None or parts.path.strip("/"):
            raise ValueError(wrong)
        self.pages = pages
        self.internal_base = internal_base.rstrip("/")
        self.other_origin = other_origin.rstrip("/") if other_origin else None
        self._scheme, self._port = parts.scheme, port

    def announced(self) -> list[str]:
        """What robots.txt announces besides its other sitemaps: the internal sitemap and
        (a path, on the request's Host) the index of the doors."""
        return [self.internal_base + INTERNAL_SITEMAP, INDEX_PATH]

    def internal_pages(self) -> list[str]:
        """The internal pages `/doors/pages.xml` lists: page i + 1 on the i-th spelling."""
        return [
            f"{self._scheme}://{host}:{self._port}/page/{i + 1}"
            for i, host in enumerate(self._hosts)
        ]

    def page_urls(self, own: str) -> list[str]:
        """Every entry of `/doors/pages.xml` as served on the origin `own`."""
        redirected = quote(f"{self.internal_base}/page/{REDIRECTED_PAGE}", safe="")
        other = [f"{self.other_origin}/page/{OTHER_ORIGIN_PAGE}"] if self.other_origin else []
        return [
            *(f"{own}{PREFIX}page/{n}" for n in OWN_PAGES),
            *self.internal_pages(),
            f"{own}/hostile/r/to?url={redirected}",
            *other,
        ]

    async def index(self, request: web.Request) -> web.Response:
        """The sitemap index: the pages here, the internal sitemap, the redirecting child."""
        own = f"{request.scheme}://{request.host}"
        children = [own + PAGES_PATH, self.internal_base + INTERNAL_SITEMAP, own + MOVED_PATH]
        return _xml("sitemapindex", "sitemap", children)

    async def moved(self, request: web.Request) -> web.Response:
        """A child sitemap that has moved inside."""
        raise web.HTTPFound(self.internal_base + INTERNAL_SITEMAP)

    async def urlset(self, request: web.Request) -> web.Response:
        """The urlset of own, internal, redirecting and other-origin pages."""
        return _xml("urlset", "url", self.page_urls(f"{request.scheme}://{request.host}"))

    async def page(self, request: web.Request) -> web.Response:
        """Page n of the site, under `/doors/`."""
        return self.pages.response(self.pages.number(request))

    def routes(self) -> list[web.RouteDef]:
        """The routes to add to the site."""
        return [
            web.get(INDEX_PATH, self.index),
            web.get(MOVED_PATH, self.moved),
            web.get(PAGES_PATH, self.urlset),
            web.get(r"/doors/page/{n:\d+}", self.page),
        ]
