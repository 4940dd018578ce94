"""A changing page as a news site serves it (`/changing/noisy/{n}`): the same page, inside chrome
that differs on every request and is no change of the page: a header with a menu and a
"Trending now" headline, a "Most read" box of five other pages' headlines, and a quote of the
moment in the footer. None of it holds a date or a counter, so no `change_ignore` pattern
takes it out: only a digest of the page's main content leaves it out.

What each request draws is a pure function of the page, its request count and the site's seed
(`seeded_hash`), so a test can tell what was served from what the truth says.
"""

import html
from datetime import datetime

from scrapeflow_dagster.site.content.changing.versions import ChangingPage, changing_html
from scrapeflow_dagster.site.content.pages import seeded_hash

# Purpose tag of `seeded_hash`, apart from those of `versions`.
_TAG_CHROME = 34
MOST_READ = 5  # headlines in the "Most read" box
MENU = ("Home", "World", "Business", "Science", "Culture", "Sport", "Opinion")
_SUBJECTS = ("Council", "Harbour board", "Rail company", "Museum", "University", "Market hall")
_EVENTS = (
    "opens a new wing",
    "delays its vote",
    "names a new director",
    "cuts its fares",
    "wins an award",
    "plans a night service",
    "reports record visitors",
    "closes for repairs",
)
_QUOTES = (
    "Simplicity is prerequisite for reliability.",
    "The best way out is always through.",
    "Well begun is half done.",
    "Nothing will come of nothing.",
    "Fortune favours the bold.",
    "Brevity is the soul of wit.",
)


def _headline(h: int) -> str:
    return f"{_SUBJECTS[h % len(_SUBJECTS)]} {_EVENTS[(h >> 4) % len(_EVENTS)]}"


def chrome_of(n: int, views: int, *, seed: int = 0) -> tuple[str, list[str], str]:
    """What the chrome around page n shows at its `views`-th request: the trending headline,
    the "Most read" headlines and the quote: six of 48 headlines and one of six quotes drawn
    per request, so two requests almost never show the same chrome."""
    draws = [seeded_hash(_TAG_CHROME, seed, n, views, i) for i in range(MOST_READ + 2)]
    trending = _headline(draws[0])
    most_read = [_headline(h) for h in draws[1 : MOST_READ + 1]]
    return trending, most_read, _QUOTES[draws[-1] % len(_QUOTES)]


def noisy_changing_html(
    page: ChangingPage, *, served_at: datetime, views: int, seed: int = 0
) -> str:
    """`changing_html(page)` inside the chrome of its `views`-th request (see the module).

    Args:
        page: what the page shows.
        served_at: the wall time of serving (`changing_html`'s noise, kept).
        views: the page's request count, this one included: picks the chrome too.
        seed: the site's seed.

    Returns:
        The HTML document.
    """
    plain = changing_html(page, served_at=served_at, views=views)
    trending, most_read, quote = chrome_of(page.n, views, seed=seed)
    menu = "".join(f'<li><a href="/section/{m.lower()}">{m}</a></li>' for m in MENU)
    header = (
        f'<header class="site-header"><ul class="menu">{menu}</ul>\n'
        f'<div class="trending">Trending now: <a href="/changing/">{html.escape(trending)}</a>'
        "</div></header>\n"
    )
    box = "".join(f'<li><a href="/changing/">{html.escape(h)}</a></li>' for h in most_read)
    aside = f'<aside class="most-read"><h2>Most read</h2><ol>{box}</ol></aside>\n'
    head, _, rest = plain.partition("<body>")
    body, _, tail = rest.rpartition("<footer>")
    return (
        f"{head}<body>{header}<main>{body}</main>\n{aside}<footer>"
        f'<p class="quote">{html.escape(quote)}</p>{tail}'
    )
