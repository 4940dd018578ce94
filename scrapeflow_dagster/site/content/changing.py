"""`/changing/`: pages that change on known schedules, so that a test or a benchmark of change
detection knows when each page changed and what changed.

Time is a site clock in SITE seconds, kept per app: it starts at 0.0 and moves only when told
(`POST /control/changing/clock?t=SECONDS` sets it, never backwards; `?advance=SECONDS` moves it
forward). Site second t is the wall time `EPOCH + t` (2026-01-01T00:00:00Z + t) in the headers
and the sitemap.

Page n changes at the times of a Poisson process of `rate_per_hour(n, rates)` changes per hour
(`change_times`): exponential gaps drawn from `random.Random(f"{seed}:changing:{n}")`. Its version
at time t is how many change times are <= t (`version_at`); what version v shows is
`changing_page(n, v)`, and version v differs from version v-1 (v > 0) in exactly:
    - paragraph `v % 6`, replaced by a new sentence beginning `Version {v} says` (so its readable
      text always changes: a text digest sees every change);
    - the title, `Changing page {n} (edition {v // 3})`, only when `v % 3 == 0`;
    - the links: `added_link(n, v)` is appended, and when v is even and the page then has more
      than 2 added links (from v = 4 on), its oldest added link is removed;
    - the price (`$1,234.50` in `<span class="price">`), only when `v % 4 == 1`.
Everything else (the other paragraphs, the index link and the link to the next page) stays.

Two things vary on every request and are NOT changes: `Served <time>`, the wall clock when served
(twice: `Served Sun, 29 Nov 2026 12:34:56 GMT` near the top and `Served 2026-11-29 12:34:56`
in the footer), and `<span class="views">{k} views</span>`, the page's request count.

Routes (the `ChangingPages` class):
    GET /changing/{n}              the current version's HTML, with `ETag: "{n}-{version}"` and
                                   `Last-Modified` (the last change time, to the second); a
                                   matching If-None-Match (or, without one, an If-Modified-Since
                                   at or after Last-Modified) gets a bodiless 304; 404 beyond the
                                   site's `changing_pages`
    GET /changing/                 an index linking every changing page
    GET /changing/sitemap.xml      a urlset of every page, absolute on the request's Host header,
                                   with `<lastmod>` (the last change, `EPOCH` for version 0) and
                                   `<changefreq>` (`changefreq(rate)`)
    GET /control/changing          the truth: `{"t": now, "pages": {"<n>": {"version": v,
                                   "rate_per_hour": r, "changes": [times <= now], "requests": k}}}`
    GET /control/changing/{n}      the same, for page n alone
    GET /control/changing/clock    `{"t": now}`
    POST /control/changing/clock   `?t=SECONDS` (>= now, else 400) or `?advance=SECONDS` (>= 0),
                                   answering `{"t": now}`; at most `MAX_SITE_SECONDS` (ten years)
"""

import bisect
import html
import math
import random
import threading
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime
from typing import NamedTuple

from aiohttp import web

from scrapeflow_dagster.site.content.pages import SITEMAP_NS, seeded_hash

DEFAULT_CHANGING_PAGES = 40
# Changes per hour by n % 10: hourly, daily three times, weekly three times, never three times.
DEFAULT_CHANGING_RATES: tuple[float, ...] = (
    1.0,
    1 / 24,
    1 / 24,
    1 / 24,
    1 / 168,
    1 / 168,
    1 / 168,
    0.0,
    0.0,
    0.0,
)
PARAGRAPHS = 6
# How far the site clock may go: ten years of site time. Change times are drawn up to the clock
# and kept, so an absurd `t` would otherwise hold the server drawing for ever.
MAX_SITE_SECONDS = 10 * 365 * 86_400.0
# Site second 0 as a wall time: what Last-Modified and the sitemap's lastmod count from.
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)

# Purpose tags of `seeded_hash`, so paragraphs, revisions and prices draw unrelated numbers.
_TAG_PARAGRAPH = 31
_TAG_REVISION = 32
_TAG_PRICE = 33
_ADJECTIVES = ("quiet", "amber", "rapid", "hollow", "gentle", "crimson", "silver", "distant")
_NOUNS = ("river", "lantern", "harbor", "meadow", "engine", "garden", "archive", "bridge")
_VERBS = ("crosses", "guards", "follows", "lights", "shapes", "carries", "finds", "keeps")
_ADVERBS = ("slowly", "today", "again", "softly", "at dawn", "by night", "on time", "for now")


class ChangingPage(NamedTuple):
    """What version `version` of changing page `n` shows (besides the per-request noise)."""

    n: int
    version: int
    title: str
    paragraphs: list[str]
    links: list[str]  # site paths in page order: the index, the next page, then the added links
    price: float


def rate_per_hour(n: int, rates: Sequence[float] | None = None) -> float:
    """How many times per hour page n changes on average.

    Args:
        n: the page number.
        rates: changes per hour, cycled over the pages (page n gets `rates[n % len(rates)]`);
            None means `DEFAULT_CHANGING_RATES`.

    Returns:
        The rate, 0.0 for a page that never changes.
    """
    cycle = DEFAULT_CHANGING_RATES if rates is None else rates
    return float(cycle[n % len(cycle)])


def changefreq(rate: float) -> str:
    """The sitemap `<changefreq>` of a page changing `rate` times per hour."""
    if rate >= 1.0:
        return "hourly"
    if rate >= 1 / 24:
        return "daily"
    if rate >= 1 / 168:
        return "weekly"
    return "monthly" if rate > 0 else "never"


class _Schedule:
    """One page's change times, drawn as far as asked and kept (the draws are sequential)."""

    def __init__(self, seed: int, n: int, rate: float) -> None:
        self.rng = random.Random(f"{seed}:changing:{n}")
        self.per_second = rate / 3600
        self.times: list[float] = []
        self.drawn_until = 0.0  # every change time <= this is in `times`

    def extend(self, until: float) -> None:
        if self.per_second <= 0:
            return
        while self.drawn_until < until:
            last = self.times[-1] if self.times else 0.0
            following = last + self.rng.expovariate(self.per_second)
            self.times.append(following)
            self.drawn_until = following

    def count(self, until: float) -> int:
        self.extend(until)
        return bisect.bisect_right(self.times, until)


# Schedules by (seed, n, rate), shared by every app and test of this process: they are pure
# functions of the key. The lock is there because `SiteThread` serves from another thread.
_SCHEDULES: dict[tuple[int, int, float], _Schedule] = {}
_LOCK = threading.Lock()


def _check_time(t: float, name: str) -> None:
    if not math.isfinite(t):
        raise ValueError(f"{name} must be a finite number of site seconds, got {t}")


def _schedule(n: int, seed: int, rate: float) -> _Schedule:
    key = (seed, n, rate)
    found = _SCHEDULES.get(key)
    if found is None:
        found = _SCHEDULES[key] = _Schedule(seed, n, rate)
    return found


def change_times(
    n: int, until: float, *, seed: int = 0, rates: Sequence[float] | None = None
) -> list[float]:
    """The times (site seconds) at which page n changes, up to `until` included.

    Args:
        n: the page number.
        until: the last time of interest, in site seconds.
        seed: the site's seed.
        rates: the site's `changing_rates` (None: `DEFAULT_CHANGING_RATES`).

    Returns:
        The change times, increasing, all in (0, until]; [] for a page that never changes.

    Raises:
        ValueError: when `until` is not finite.
    """
    _check_time(until, "until")
    with _LOCK:
        schedule = _schedule(n, seed, rate_per_hour(n, rates))
        return schedule.times[: schedule.count(until)]


def version_at(n: int, t: float, *, seed: int = 0, rates: Sequence[float] | None = None) -> int:
    """Page n's version at site time t: how many times it changed at or before t (0 at first).

    Args and Raises: as `change_times`, with t as `until`.
    """
    _check_time(t, "t")
    with _LOCK:
        return _schedule(n, seed, rate_per_hour(n, rates)).count(t)


def last_change(n: int, t: float, *, seed: int = 0, rates: Sequence[float] | None = None) -> float:
    """The time of page n's last change at or before t; 0.0 while it is at version 0."""
    _check_time(t, "t")
    with _LOCK:
        schedule = _schedule(n, seed, rate_per_hour(n, rates))
        count = schedule.count(t)
        return schedule.times[count - 1] if count else 0.0


def _words(h: int) -> tuple[str, str, str, str]:
    return (
        _ADJECTIVES[h % 8],
        _NOUNS[(h >> 3) % 8],
        _VERBS[(h >> 6) % 8],
        _ADVERBS[(h >> 9) % 8],
    )


def _removed_before(version: int) -> int:
    """How many added links version `version` has dropped: one at each even version from 4 on
    (the first even version whose page then holds more than 2 added links)."""
    return max(0, version // 2 - 1)


# Added links by (n, count): `_ADDED[(n, count)][k - 1]` is the link version k added. Each
# choice avoids the links present at the time, so it depends on the earlier ones: kept.
_ADDED: dict[tuple[int, int], list[str]] = {}


def _fixed_links(n: int, count: int) -> list[str]:
    return ["/changing/", f"/changing/{(n + 1) % count}"]


def _added_links(n: int, count: int, upto: int) -> list[str]:
    """The links versions 1 .. upto added to page n, in order (held under `_LOCK`)."""
    chosen = _ADDED.setdefault((n, count), [])
    if len(chosen) >= upto:
        return chosen[:upto]
    # The links on the page as of the last version chosen, counted (an added link may repeat
    # once every page is linked): kept as the versions advance rather than rebuilt each time.
    present = Counter([*_fixed_links(n, count), *chosen[_removed_before(len(chosen)) :]])
    for k in range(len(chosen) + 1, upto + 1):
        start = n + 7 * k
        pick = f"/changing/{start % count}"  # when every other page is linked already
        for j in range(count):
            m = (start + j) % count
            if m != n and f"/changing/{m}" not in present:
                pick = f"/changing/{m}"
                break
        chosen.append(pick)
        present[pick] += 1
        if _removed_before(k) > _removed_before(k - 1):
            oldest = chosen[_removed_before(k) - 1]
            present[oldest] -= 1
            if not present[oldest]:
                del present[oldest]
    return chosen[:upto]


def added_link(n: int, version: int, *, count: int = DEFAULT_CHANGING_PAGES) -> str:
    """The link version `version` (> 0) of page n adds: `/changing/{m}` for the first m of
    `n + 7*version`, `n + 7*version + 1`, ... (mod count) that is neither n nor already linked
    (the index, the next page, the added links still there); `/changing/{(n + 7*version) % count}`
    when there is no such m."""
    if version < 1:
        raise ValueError(f"version 0 adds no link; got version {version}")
    with _LOCK:
        return _added_links(n, count, version)[version - 1]


def price_of(n: int, version: int, *, seed: int = 0) -> float:
    """The price version `version` of page n shows: new at versions 1, 5, 9, ...

    The price is drawn per edition e = (version + 3) // 4 and its cents have the parity of e,
    so two consecutive editions never show the same price.
    """
    edition = (version + 3) // 4
    cents = 2 * (500 + seeded_hash(_TAG_PRICE, seed, n, edition) % 124_000) + edition % 2
    return cents / 100


def changing_page(
    n: int, version: int, *, seed: int = 0, count: int = DEFAULT_CHANGING_PAGES
) -> ChangingPage:
    """What version `version` of changing page n shows (see the module for what each version
    changes).

    Args:
        n: the page number, in 0 .. count-1.
        version: the version, >= 0.
        seed: the site's seed: picks the words of the paragraphs and the prices.
        count: how many changing pages the site has (the links point among them).

    Returns:
        The page's title, 6 paragraphs, links (site paths) and price.

    Raises:
        ValueError: when n or version is out of range.
    """
    if not 0 <= n < count or version < 0:
        raise ValueError(f"need 0 <= n < count and version >= 0, got {n}, {count}, {version}")
    paragraphs = []
    for i in range(PARAGRAPHS):
        # The last version <= `version` that rewrote paragraph i (versions k > 0, k % 6 == i).
        k = version - (version - i) % PARAGRAPHS
        if k >= 1:
            adj, noun, verb, adv = _words(seeded_hash(_TAG_REVISION, seed, n, k))
            paragraphs.append(f"Version {k} says the {adj} {noun} {verb} {adv}.")
        else:
            adj, noun, verb, adv = _words(seeded_hash(_TAG_PARAGRAPH, seed, n, i))
            paragraphs.append(f"The {adj} {noun} {verb} {adv}.")
    with _LOCK:
        added = _added_links(n, count, version)[_removed_before(version) :]
    return ChangingPage(
        n=n,
        version=version,
        title=f"Changing page {n} (edition {version // 3})",
        paragraphs=paragraphs,
        links=[*_fixed_links(n, count), *added],
        price=price_of(n, version, seed=seed),
    )


def _link_text(path: str, position: int) -> str:
    if position == 0:
        return "All changing pages"
    label = "Next" if position == 1 else "Related"
    return f"{label}: changing page {path.rsplit('/', 1)[1]}"


def changing_html(page: ChangingPage, *, served_at: datetime, views: int) -> str:
    """The HTML of `page` as served at `served_at` to its `views`-th request.

    Args:
        page: what the page shows.
        served_at: the wall time of serving (naive means UTC): noise, twice in the page.
        views: the page's request count, this one included: noise too.

    Returns:
        The HTML document.
    """
    served = served_at.replace(tzinfo=UTC) if served_at.tzinfo is None else served_at
    served = served.astimezone(UTC).replace(microsecond=0)
    title = html.escape(page.title)
    nav, *others = (
        f'<a href="{path}">{html.escape(_link_text(path, i))}</a>'
        for i, path in enumerate(page.links)
    )
    paragraphs = "".join(f"<p>{html.escape(p)}</p>\n" for p in page.paragraphs)
    links = "".join(f"<li>{link}</li>" for link in others)
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{title}</title></head>\n'
        f"<body><nav>{nav}</nav>\n"
        f'<p class="served">Served {format_datetime(served, usegmt=True)}</p>\n'
        f"<h1>{title}</h1>\n{paragraphs}"
        f'<p>Price: <span class="price">${page.price:,.2f}</span></p>\n'
        f'<ul class="links">{links}</ul>\n'
        f"<footer>Served {served:%Y-%m-%d %H:%M:%S} - "
        f'<span class="views">{views} views</span></footer>\n</body></html>\n'
    )


def site_time(t: float) -> datetime:
    """Site second t as a wall time, to the second (as HTTP dates and lastmod carry it)."""
    return (EPOCH + timedelta(seconds=t)).replace(microsecond=0)


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
        n = self._number(request)
        self.requests[n] += 1
        version = version_at(n, self.now, seed=self.seed, rates=self.rates)
        modified = site_time(last_change(n, self.now, seed=self.seed, rates=self.rates))
        etag = f'"{n}-{version}"'
        headers = {"ETag": etag, "Last-Modified": format_datetime(modified, usegmt=True)}
        if _not_modified(request, etag, modified):
            return web.Response(status=304, headers=headers)
        body = changing_html(
            changing_page(n, version, seed=self.seed, count=self.count),
            served_at=datetime.now(UTC),
            views=self.requests[n],
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
