"""The `/changing/` routes of one app (`ChangingPages`): its site clock, its pages' request
counts, conditional answers, the index, the sitemap and the truth of what changed when."""

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime

from aiohttp import web

from scrapeflow_dagster.site.content.changing.chrome import noisy_changing_html
from scrapeflow_dagster.site.content.changing.schedule import (
    DEFAULT_CHANGING_RATES,
    MAX_SITE_SECONDS,
    change_times,
    changefreq,
    last_change,
    rate_per_hour,
    site_time,
    version_at,
)
from scrapeflow_dagster.site.content.changing.versions import changing_html, changing_page
from scrapeflow_dagster.site.content.pages import SITEMAP_NS


def _not_modified(request: web.Request, etag: str, modified: datetime) -> bool:
    """Whether the request's validators match: If-None-Match decides when present."""
    if_none_match = request.headers.get("If-None-Match")
    if if_none_match is not None:
        tags = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
        return "*" in tags or etag in tags
    if_modified_since = request.headers.get("If-Modified-Since")
    if if_modified_since is None:
        return False
    try:
        since = parsedate_to_datetime(if_modified_since)
    except (TypeError, ValueError):
        return False  # an unreadable date is ignored, as RFC 9110 says
    return since.tzinfo is not None and since >= modified


class ChangingPages:
    """The `/changing/` routes of one app: its site clock and its pages' request counts."""

    def __init__(self, *, count: int, seed: int, rates: Sequence[float] | None) -> None:
        self.count = count
        self.seed = seed
        self.rates = tuple(DEFAULT_CHANGING_RATES if rates is None else rates)
        self.now = 0.0
        self.requests: Counter[int] = Counter()

    def forget(self) -> None:
        """Back to the start: the clock at 0.0, no requests counted."""
        self.now = 0.0
        self.requests.clear()

    def routes(self) -> list[web.RouteDef]:
        """The routes to add to the site."""
        return [
            web.get("/changing/", self.index),
            web.get("/changing/sitemap.xml", self.sitemap),
            web.get(r"/changing/{n:\d+}", self.page),
            web.get(r"/changing/noisy/{n:\d+}", self.noisy_page),
            web.get("/control/changing", self.truth),
            web.get("/control/changing/clock", self.clock),
            web.post("/control/changing/clock", self.set_clock),
            web.get(r"/control/changing/{n:\d+}", self.truth_of_page),
        ]

    def _number(self, request: web.Request) -> int:
        n = int(request.match_info["n"])
        if n >= self.count:
            raise web.HTTPNotFound(text=f"no changing page {n}: there are {self.count}")
        return n

    def _truth(self, n: int) -> dict[str, object]:
        changes = change_times(n, self.now, seed=self.seed, rates=self.rates)
        return {
            "version": len(changes),
            "rate_per_hour": rate_per_hour(n, self.rates),
            "changes": changes,
            "requests": self.requests[n],
        }

    async def page(self, request: web.Request) -> web.Response:
        """The current version of page n, or a 304 when the client's copy is current."""
        return self._serve(request, noisy=False)

    async def noisy_page(self, request: web.Request) -> web.Response:
        """As `page`, inside chrome that differs on every request (`chrome`), and without
        validators: a page made afresh on each request, as such sites serve it, is fetched
        whole every time."""
        return self._serve(request, noisy=True)

    def _serve(self, request: web.Request, *, noisy: bool) -> web.Response:
        n = self._number(request)
        self.requests[n] += 1
        version = version_at(n, self.now, seed=self.seed, rates=self.rates)
        modified = site_time(last_change(n, self.now, seed=self.seed, rates=self.rates))
        etag = f'"{n}-{version}"'
        headers = {"ETag": etag, "Last-Modified": format_datetime(modified, usegmt=True)}
        if noisy:
            headers = {}
        elif _not_modified(request, etag, modified):
            return web.Response(status=304, headers=headers)
        shown = changing_page(n, version, seed=self.seed, count=self.count)
        served_at, views = datetime.now(UTC), self.requests[n]
        body = (
            noisy_changing_html(shown, served_at=served_at, views=views, seed=self.seed)
            if noisy
            else changing_html(shown, served_at=served_at, views=views)
        )
        return web.Response(text=body, content_type="text/html", charset="utf-8", headers=headers)

    async def index(self, request: web.Request) -> web.Response:
        """Links to every changing page."""
        items = "".join(
            f'<li><a href="/changing/{n}">Changing page {n}</a></li>' for n in range(self.count)
        )
        text = (
            '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Changing pages</title>'
            f"</head>\n<body><h1>Changing pages</h1><ul>{items}</ul></body></html>\n"
        )
        return web.Response(text=text, content_type="text/html", charset="utf-8")

    async def sitemap(self, request: web.Request) -> web.Response:
        """Every page, absolute on the request's Host header, with lastmod and changefreq."""
        base = f"{request.scheme}://{request.host}"
        urls = []
        for n in range(self.count):
            modified = site_time(last_change(n, self.now, seed=self.seed, rates=self.rates))
            urls.append(
                f"<url><loc>{base}/changing/{n}</loc>"
                f"<lastmod>{modified:%Y-%m-%dT%H:%M:%SZ}</lastmod>"
                f"<changefreq>{changefreq(rate_per_hour(n, self.rates))}</changefreq></url>"
            )
        text = (
            f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {SITEMAP_NS}>{"".join(urls)}'
            "</urlset>\n"
        )
        return web.Response(text=text, content_type="application/xml")

    async def truth(self, request: web.Request) -> web.Response:
        """Every page's version, rate, change times so far and request count."""
        pages = {str(n): self._truth(n) for n in range(self.count)}
        return web.json_response({"t": self.now, "pages": pages})

    async def truth_of_page(self, request: web.Request) -> web.Response:
        """As `truth`, for page n alone."""
        n = self._number(request)
        return web.json_response({"t": self.now, "pages": {str(n): self._truth(n)}})

    async def clock(self, request: web.Request) -> web.Response:
        """The site clock."""
        return web.json_response({"t": self.now})

    async def set_clock(self, request: web.Request) -> web.Response:
        """Set the clock (`?t=`, never backwards) or move it forward (`?advance=`)."""
        given = [name for name in ("t", "advance") if name in request.query]
        if len(given) != 1:
            raise web.HTTPBadRequest(text="give exactly one of t (site seconds) and advance")
        name = given[0]
        try:
            value = float(request.query[name])
        except ValueError:
            raise web.HTTPBadRequest(text=f"{name} must be a number of site seconds") from None
        target = value if name == "t" else self.now + value
        if not 0 <= target <= MAX_SITE_SECONDS:  # NaN fails this too
            raise web.HTTPBadRequest(
                text=f"{name}={value} would put the site clock at {target}, outside 0 .. "
                f"{MAX_SITE_SECONDS} site seconds"
            )
        if target < self.now:
            raise web.HTTPBadRequest(
                text=f"the site clock never goes back: {name}={value} would move it from "
                f"{self.now} to {target}"
            )
        self.now = target
        return web.json_response({"t": self.now})
