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
    GET /changing/noisy/{n}        the same page (same versions; its requests count as page
                                   n's) inside chrome that differs on every request and is no
                                   change either: a menu, a "Trending now" headline, a "Most
                                   read" box, a quote (`chrome`); no ETag or Last-Modified (a
                                   page made afresh on each request), so never a 304
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

Modules: `schedule` (when each page changes, the site clock as wall time), `versions` (what each
version shows and its HTML), `chrome` (the noisy pages' chrome), `routes` (the `ChangingPages`
routes); their public names are importable from here.
"""

from scrapeflow_dagster.site.content.changing.chrome import chrome_of, noisy_changing_html
from scrapeflow_dagster.site.content.changing.routes import ChangingPages
from scrapeflow_dagster.site.content.changing.schedule import (
    DEFAULT_CHANGING_RATES,
    EPOCH,
    MAX_SITE_SECONDS,
    change_times,
    changefreq,
    last_change,
    rate_per_hour,
    site_time,
    version_at,
)
from scrapeflow_dagster.site.content.changing.versions import (
    DEFAULT_CHANGING_PAGES,
    PARAGRAPHS,
    ChangingPage,
    added_link,
    changing_html,
    changing_page,
    price_of,
)

__all__ = [
    "DEFAULT_CHANGING_PAGES",
    "DEFAULT_CHANGING_RATES",
    "EPOCH",
    "MAX_SITE_SECONDS",
    "PARAGRAPHS",
    "ChangingPage",
    "ChangingPages",
    "added_link",
    "change_times",
    "changefreq",
    "changing_html",
    "changing_page",
    "chrome_of",
    "last_change",
    "noisy_changing_html",
    "price_of",
    "rate_per_hour",
    "site_time",
    "version_at",
]
