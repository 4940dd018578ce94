"""What version v of changing page n shows (its title, paragraphs, links and price) and its
HTML as served, with the per-request noise that is not a change."""

import html
import threading
from collections import Counter
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import NamedTuple

from scrapeflow_dagster.site.content.pages import seeded_hash

DEFAULT_CHANGING_PAGES = 40
PARAGRAPHS = 6

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
# choice avoids the links present at the time, so it depends on the earlier ones: kept. The
# lock is there because `SiteThread` serves from another thread.
_ADDED: dict[tuple[int, int], list[str]] = {}
_LOCK = threading.Lock()


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
