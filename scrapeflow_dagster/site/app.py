"""The local test website: deterministic pages plus fault routes, as a plain aiohttp app.

Every answer is a pure function of the route, the app's `seed` and (for stateful routes) how
many times, or since when, the route was requested before, so tests can predict it. Stateful
routes keep their state per app: two apps never share it.

Routes (and the module that serves them, in the subpackages `content`, `crawling`, `faults`,
`adversary` and `client`):
    `/page/{n}` (`content.pages`): HTML of exactly `page_bytes` bytes (when that is more than the
        head), titled `Page n`, linking first to `/page/{n+1}` (so a crawl from page 0 reaches every
        page), then to 9 more pages chosen by `page_links`.
    `/sitemap.txt` (`content.pages`): one absolute URL per page; `/sitemap.xml` the same as an
        XML sitemap (a urlset), each URL absolute on the request's Host header.
    `/cached/{n}` (`content.pages`): page n with an ETag and a Last-Modified; a request with a
        matching If-None-Match or If-Modified-Since gets a 304 and no body.
        `GET /control/cached` counts the answers by status (`{"200": a, "304": b}`).
    `/status/{code}`, `/retry-after/{seconds}` (429), `/slow/{seconds}`, `/captcha` (200 block
        page) (`faults.stateless`); `/redirect/{n}`, `/redirect-loop`, `/big/{nbytes}`, `/echo`,
        `/set-cookie?k=v`, `/health` (`client.routes`).
    `/reset` (`faults.stateless`): aborts the TCP connection with an RST, the client sees
        `ClientOSError`.
    `/truncated` (`faults.stateless`): declares a Content-Length and closes halfway:
        `ClientPayloadError`.
    `/flaky/{name}?fail=K&code=503` (`faults.named`): the first K requests for `name` answer
        `code`, later ones page 0; `fail=-1` fails forever. `POST /control/flaky/{name}?fail=K`
        sets the failures left, `POST /control/flaky/{name}/reset` forgets the name,
        `GET /control/flaky/{name}` shows it.
    `/timed/{name}?fail_seconds=S&code=503` (`faults.named`): every request for `name` that
        arrives less than S seconds (by `time.monotonic`) after the first request for `name`
        answers `code`, later ones page 0; the first request's S counts, `S=0` never fails, and
        S is required (400 when missing, negative or not a number). `GET /control/timed/{name}`
        shows `requests`, `seconds_since_first`, `fail_seconds` and `failing` (all null but
        `requests: 0` for a name never requested).
    `/mixed/{n}` (`faults.mixed`): `fault_of(n, seed, rates)` picks a fault (or none) for each n.
        Faults are transient: a faulty n fails on its first request and serves its page afterwards,
        so retries converge; a `reset` fault fails the first two requests, because aiohttp's client
        silently reconnects once on a dropped connection. `?sticky=1` makes the fault permanent.
        `server_error` answers 503, `too_many` 429 with Retry-After, `slow` sleeps `slow_seconds`
        first, `truncated` cuts the page body, `captcha` serves the block page.
    `/charset/{name}?declared=header` (`content.charsets`): a page in charset `name`
        (`windows-1251`, `koi8-r` and `utf-8` in Cyrillic, `iso-8859-1` in accented French) whose
        charset is named in the Content-Type header (`header`, the default), a `<meta charset>`
        (`meta`), a `<meta http-equiv="Content-Type">` (`http-equiv`) or nowhere (`none`); 404 for
        others.
    `/products/list/{k}`, `/products/{n}` (`content.products`): a shop of `pages` products with
        data to extract (`product(n)` is what page n shows; every seventh is sold out, without
        a price).
    `/app/` (`content.scripted`): pages built by JavaScript (a shell whose script fetches its
        content and links from `/app/api/`): an index of `SCRIPTED_ITEMS` items, each item
        linking to the next; `/app/slow`, `/app/never-settles` (polls for ever) and
        `/app/internal?target=URL` (its script requests URL), for renderers.
    `/graphql/` (`content.graphql`): a page whose script loads its content by POST (a JSON
        query to `/graphql/api`, or to `?endpoint=URL`); `GET /control/graphql` lists the API's
        requests (method, Content-Type, body).
    `/changing/{n}` (`content.changing`): `changing_pages` pages that change on known schedules
        (Poisson, `changing_rates` changes per hour cycled over the pages; by default by n % 10:
        0 hourly, 1-3 daily, 4-6 weekly, 7-9 never) on a site clock in site seconds that moves
        only when told: `POST /control/changing/clock?t=S` (never backwards: 400) or
        `?advance=S`, `GET /control/changing/clock`. A page's version is how many change times
        are <= the clock (`change_times`, `version_at`); `changing_page(n, v)` is what version v
        shows: each version rewrites paragraph v % 6, adds a link (dropping the oldest added one
        at even versions from 4), retitles at v % 3 == 0 and reprices at v % 4 == 1. Served with
        `ETag: "{n}-{v}"` and Last-Modified (304 to a match), plus noise that is no change (the
        wall time served, a views counter). `/changing/` indexes them; `/changing/sitemap.xml`
        lists them with lastmod and changefreq. `GET /control/changing` (`/{n}` for one) is the
        truth: `{"t": now, "pages": {"<n>": {"version", "rate_per_hour", "changes",
        "requests"}}}`.
    `/widget-captcha?widget=recaptcha` (`content.bot_checks`): a normal contact page that loads a
        captcha widget's script and has its div: `recaptcha` (the default, `g-recaptcha`),
        `hcaptcha` (`h-captcha`) or `turnstile` (`cf-turnstile`); a validator must let it through.
    `/blocked/{kind}` (`content.bot_checks`): 200 block pages as real anti-bot services serve them:
        `access-denied` (Akamai), `unusual-traffic` (Google's, with a reCAPTCHA widget),
        `verify-human` (Cloudflare's challenge) and `cloudflare-blocked`.
    `/graph/{n}` (`crawling.graph`): node n of a complete ternary tree of `graph_size` nodes (404
        beyond): children 3n+1..3n+3, parent (n-1)//3. Titled `Graph n`, it links, in order, to
        child 1 (`href="{c1}"`), child 2 (`./{c2}#part`), child 3 absolute on the request's Host
        header (`http://{host}/graph/{c3}#top`), the parent (`../graph/{p}`, n > 0), the root
        (`/graph/0#top`), `/graph/private/{n}`, `http://elsewhere.invalid/graph/{n}`, a mailto,
        a `javascript:` link and `#footer`. Nodes within depth d are 0 .. (3**(d+1)-1)//2 - 1.
        Answers after `graph_delay_seconds`, with an ETag and a Last-Modified (304 to a match).
    `/graph/private/{n}` (`crawling.graph`): a 200 page that robots.txt disallows.
    `/robots.txt` (`crawling.graph`): `User-agent: *`, `Disallow: /graph/private/`, and
        `Crawl-delay: X` when `crawl_delay_seconds` is set; `Sitemap:` lines, in order, for
        `/sitemaps/index.xml` when `sitemap_in_robots`, for `{internal_base}/sitemap.xml` and
        `/doors/sitemap_index.xml` when `internal_base` is set, and for each of `cross_submit`.
    `/hostile/` (`adversary.hostile`): a crawler's adversary: redirects into a robots.txt-disallowed
        path, to another host, to `file:`, in a loop, in a chain, to an internal address; a
        300 MiB body, a gzip bomb, an endless path.
    `/doors/` (`adversary.doors`, only when `internal_base` is set): sitemaps whose entries lead
        inside: `/doors/sitemap_index.xml` lists `/doors/pages.xml`, `{internal_base}/sitemap.xml`
        and `/doors/moved.xml` (302 to `{internal_base}/sitemap.xml`); `/doors/pages.xml` lists
        `/doors/page/{0,1,2}` (this site's pages), the internal pages 1-7 each on another
        spelling of the internal address (`127.0.0.1`, `localhost`, `2130706433`, `127.1`,
        `0x7f.0.0.1`, `0177.0.0.1`, `[::ffff:127.0.0.1]`), `/hostile/r/to?url=` the internal
        page 8, and `{other_origin}/page/5` when `other_origin` is set.
    `/docs/{n}` (`crawling.docs`): a documentation site's shape (530 pages, index pages with
        hundreds of links, 502 within depth 3 of `/docs/0`), for crawl benchmarks.
    `/sitemaps/index.xml` (`crawling.sitemaps`): a sitemap index of an XML sitemap and a gzipped
        one, listing graph pages with and without `lastmod`; `POST
        /control/lastmod?path=P&lastmod=D` dates a listed page anew.
    `/spelled/` (`crawling.spelled`): links spelled as real sites spell them (escapes, bare query
        keys, query order and repeats, `@` in paths, dot segments) under a `<base href>`, an
        `<area>` link, and `/spelled/many` with 1,200 links; `GET /control/spelled` lists the
        request targets as they arrived (undecoded).
    `GET /control/requests` (`client.traffic`): every non-control request counted:
        `{"paths": {path: n}, "hosts": {host: {path: n}}, "statuses": {path: {"200": a, "304":
        b}}, "max_in_flight": {host: n}, "max_in_flight_by_client": {host: {client address: n}},
        "in_flight": {host: n}}`, hosts as the requests' Host headers (`127.0.0.1:P` and
        `localhost:P` are two).
        `POST /control/requests/reset` zeroes the counts (requests still in flight stay in
        `in_flight` and start the new `max_in_flight`).
    `POST /control/reset`: forgets all flaky, timed and mixed state, the request counts, the
        `/spelled/` targets, and the changing pages' clock (back to 0) and request counts.
"""

import math
from collections.abc import Sequence

from aiohttp import web

from scrapeflow_dagster.site.adversary.doors import Doors
from scrapeflow_dagster.site.adversary.hostile import Hostile
from scrapeflow_dagster.site.client import routes as client_routes
from scrapeflow_dagster.site.client.traffic import Traffic
from scrapeflow_dagster.site.content import bot_checks, charsets
from scrapeflow_dagster.site.content.changing import DEFAULT_CHANGING_PAGES, ChangingPages
from scrapeflow_dagster.site.content.graphql import GraphQL
from scrapeflow_dagster.site.content.pages import LINKS_PER_PAGE, Pages, page_links
from scrapeflow_dagster.site.content.products import Products
from scrapeflow_dagster.site.content.scripted import Scripted
from scrapeflow_dagster.site.crawling import docs, sitemaps
from scrapeflow_dagster.site.crawling.graph import DEFAULT_GRAPH_SIZE, Graph
from scrapeflow_dagster.site.crawling.spelled import Spelled
from scrapeflow_dagster.site.faults import stateless as faults
from scrapeflow_dagster.site.faults.mixed import (
    FAULT_KINDS,
    RESET_FAULT_REQUESTS,
    FaultRates,
    MixedFaults,
    fault_of,
)
from scrapeflow_dagster.site.faults.named import NamedFaults
from scrapeflow_dagster.site.faults.stateless import CAPTCHA_HTML, SERVER_ERROR_STATUS, PageFaults

__all__ = [
    "CAPTCHA_HTML",
    "FAULT_KINDS",
    "LINKS_PER_PAGE",
    "RESET_FAULT_REQUESTS",
    "SERVER_ERROR_STATUS",
    "FaultRates",
    "build_site",
    "fault_of",
    "page_links",
]


def build_site(
    *,
    pages: int = 1000,
    page_bytes: int = 20_000,
    seed: int = 0,
    fault_rates: FaultRates | None = None,
    graph_size: int = DEFAULT_GRAPH_SIZE,
    graph_delay_seconds: float = 0.0,
    crawl_delay_seconds: float | None = None,
    sitemap_in_robots: bool = False,
    internal_url: str | None = None,
    internal_base: str | None = None,
    other_origin: str | None = None,
    cross_submit: Sequence[str] = (),
    changing_pages: int = DEFAULT_CHANGING_PAGES,
    changing_rates: Sequence[float] | None = None,
) -> web.Application:
    """Build the local test website; see the module docstring for its routes.

    Args:
        pages: how many `/page/{n}` (and `/mixed/{n}`) pages exist.
        page_bytes: the size of each page body in bytes (pages never get smaller than their head).
        seed: picks the links between pages, the filler text and which mixed pages are faulty.
        fault_rates: the fault mix of `/mixed/{n}`; None means `FaultRates()`.
        graph_size: how many `/graph/{n}` nodes exist.
        graph_delay_seconds: how long each `/graph/{n}` page waits before answering.
        crawl_delay_seconds: the `Crawl-delay` robots.txt announces; None leaves it out.
        sitemap_in_robots: whether robots.txt announces `/sitemaps/index.xml` (`Sitemap:`).
        internal_url: where `/hostile/r/internal` redirects (default: the site's own
            `/hostile/landed`).
        internal_base: the root of an internal site (`http://IPv4:PORT`, e.g. a `SiteThread`
            on 127.0.0.1): when set, the site serves `/doors/` and its robots.txt announces
            the internal site's `/sitemap.xml` and `/doors/sitemap_index.xml`.
        other_origin: another public site's origin (`http://host:port`) whose page 5
            `/doors/pages.xml` lists (with `internal_base` only).
        cross_submit: sitemap URLs (of other sites) robots.txt announces too: this site's
            pages listed there are cross-submitted.
        changing_pages: how many `/changing/{n}` pages exist (0: none).
        changing_rates: changes per hour, cycled over the changing pages (page n gets
            `changing_rates[n % len(changing_rates)]`, 0.0 never changes); None means
            `content.changing.DEFAULT_CHANGING_RATES` (by n % 10: 1.0, 1/24 x3, 1/168 x3, 0 x3).

    Returns:
        An aiohttp application, not yet running.

    Raises:
        ValueError: when `pages` or `graph_size` is not positive, `page_bytes` or a delay
            is negative, `internal_base` is not `http://IPv4:PORT`, `changing_pages` is
            negative, or `changing_rates` is empty or has a rate that is negative or not finite.
    """
    if pages < 1 or page_bytes < 0:
        raise ValueError(f"need pages >= 1 and page_bytes >= 0, got {pages} and {page_bytes}")
    if changing_pages < 0:
        raise ValueError(f"need changing_pages >= 0, got {changing_pages}")
    if changing_rates is not None and (
        not changing_rates or not all(0 <= rate < math.inf for rate in changing_rates)
    ):
        raise ValueError(f"changing_rates must be finite rates >= 0, got {changing_rates}")
    site_pages = Pages(count=pages, page_bytes=page_bytes, seed=seed)
    page_faults = PageFaults(site_pages)
    mixed = MixedFaults(site_pages, fault_rates or FaultRates())
    named = NamedFaults(site_pages)
    doors = Doors(site_pages, internal_base, other_origin) if internal_base else None
    graph = Graph(
        size=graph_size,
        delay_seconds=graph_delay_seconds,
        crawl_delay_seconds=crawl_delay_seconds,
        sitemaps=[
            *([sitemaps.INDEX_PATH] if sitemap_in_robots else []),
            *(doors.announced() if doors else []),
            *cross_submit,
        ],
    )
    traffic = Traffic()
    spelled = Spelled()
    hostile = Hostile(internal_url)
    changing = ChangingPages(count=changing_pages, seed=seed, rates=changing_rates)

    async def reset_all(request: web.Request) -> web.Response:
        named.forget()
        mixed.forget()
        site_pages.cached_answers.clear()
        traffic.forget()
        spelled.forget()
        changing.forget()
        return web.Response(text="ok")

    app = web.Application(middlewares=[traffic.middleware])
    app[sitemaps.LASTMODS] = {}
    app.add_routes(
        [
            web.get(r"/page/{n:\d+}", site_pages.get_page),
            web.get("/sitemap.txt", site_pages.sitemap),
            web.get("/sitemap.xml", site_pages.sitemap_xml),
            web.get(r"/cached/{n:\d+}", site_pages.get_cached_page),
            web.get("/control/cached", site_pages.cached_control),
            web.get(r"/status/{code:\d{3}}", faults.status),
            web.get(r"/retry-after/{seconds:\d+}", faults.retry_after),
            web.get("/flaky/{name}", named.flaky),
            web.get("/control/flaky/{name}", named.flaky_control),
            web.post("/control/flaky/{name}", named.flaky_control),
            web.post("/control/flaky/{name}/reset", named.flaky_reset),
            web.get("/timed/{name}", named.timed_fault),
            web.get("/control/timed/{name}", named.timed_control),
            web.post("/control/reset", reset_all),
            web.get(r"/slow/{seconds:\d+(\.\d+)?}", page_faults.slow),
            web.get("/reset", faults.reset),
            web.get("/truncated", page_faults.truncated),
            web.get("/captcha", faults.captcha),
            web.get("/charset/{name}", charsets.charset_page),
            web.get("/widget-captcha", bot_checks.widget_captcha),
            web.get("/blocked/{kind}", bot_checks.blocked),
            web.get(r"/redirect/{n:\d+}", client_routes.redirect),
            web.get("/redirect-loop", client_routes.redirect_loop),
            web.get(r"/big/{nbytes:\d+}", client_routes.big),
            web.route("*", "/echo", client_routes.echo),
            web.get("/set-cookie", client_routes.set_cookie),
            web.get(r"/mixed/{n:\d+}", mixed.mixed),
            web.get("/health", client_routes.health),
            web.get(r"/graph/{n:\d+}", graph.page),
            web.get("/graph/private/{n}", graph.private),
            web.get("/robots.txt", graph.robots),
            web.get(r"/docs/{n:\d+}", docs.page),
            web.get(sitemaps.INDEX_PATH, sitemaps.index),
            web.get("/sitemaps/plain.xml", sitemaps.plain),
            web.get("/sitemaps/gzipped.xml.gz", sitemaps.gzipped),
            web.post("/control/lastmod", sitemaps.lastmod_control),
            *hostile.routes(),
            *Products(pages, seed).routes(),
            *Scripted().routes(),
            *GraphQL().routes(),
            *changing.routes(),
            *(doors.routes() if doors else []),
            web.get("/spelled/", spelled.index),
            web.get("/spelled/many", spelled.many),
            web.get("/spelled/download/{name}", spelled.download),
            web.get("/spelled/{tail:.+}", spelled.target),
            web.get("/control/spelled", spelled.control),
            web.get("/control/requests", traffic.control),
            web.post("/control/requests/reset", traffic.reset),
        ]
    )
    return app
