"""`/changing/`: pages changing on known schedules of a site clock, and the truth about them,
served for real on loopback and fetched with a real aiohttp client."""

import bisect
import re
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest
from multidict import CIMultiDict

from scrapeflow_dagster.site.app import build_site
from scrapeflow_dagster.site.content.changing import (
    DEFAULT_CHANGING_PAGES,
    DEFAULT_CHANGING_RATES,
    EPOCH,
    PARAGRAPHS,
    change_times,
    changing_html,
    changing_page,
    version_at,
)
from scrapeflow_dagster.site.server import LocalSite

SEED = 5
HOUR = 3600.0
DAY = 24 * HOUR
NS = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
# The noise of every answer: the wall time served (two spellings) and the views counter.
NOISE = re.compile(
    r"Served [A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT"
    r"|Served \d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
    r'|<span class="views">\d+ views</span>'
)


@pytest.fixture
async def site() -> AsyncIterator[LocalSite]:
    # The default 40 pages and rate mix; one tiny `/page/` so the rest of the site costs nothing.
    async with LocalSite(pages=1, page_bytes=0, seed=SEED) as s:
        yield s


async def fetch(
    session: aiohttp.ClientSession, url: str, headers: dict[str, str] | None = None
) -> tuple[int, str, CIMultiDict[str]]:
    async with session.get(url, headers=headers or {}) as response:
        # A copy that matches names case-insensitively: aiohttp's client spells ETag `Etag`.
        return response.status, await response.text(), response.headers.copy()


async def post_json(session: aiohttp.ClientSession, url: str) -> Any:
    async with session.post(url) as response:
        assert response.status == 200, await response.text()
        return await response.json()


async def get_json(session: aiohttp.ClientSession, url: str) -> Any:
    async with session.get(url) as response:
        assert response.status == 200
        return await response.json()


def readable(page_html: str) -> str:
    """The page's text without tags or noise: what a text digest of the page would hash."""
    return " ".join(re.sub(r"<[^>]+>", " ", NOISE.sub("", page_html)).split())


def served(n: int, version: int) -> str:
    return changing_html(
        changing_page(n, version, seed=SEED), served_at=datetime(2026, 11, 29, 12), views=1
    )


async def test_versions_follow_the_clock(site: LocalSite, session: aiohttp.ClientSession) -> None:
    times = change_times(0, 2 * DAY, seed=SEED)  # page 0 changes hourly on average
    assert len(times) > 10
    clock = site.url("/control/changing/clock")
    for t in [0.0, times[0] - 0.001, times[0], (times[2] + times[3]) / 2, times[9], 2 * DAY]:
        assert await post_json(session, f"{clock}?t={t!r}") == {"t": t}
        status, body, headers = await fetch(session, site.url("/changing/0"))
        version = bisect.bisect_right(times, t)
        assert status == 200 and headers["ETag"] == f'"0-{version}"'
        assert readable(body) == readable(served(0, version))
    assert await get_json(session, clock) == {"t": 2 * DAY}  # it never moves by itself
    assert await post_json(session, f"{clock}?advance=60") == {"t": 2 * DAY + 60}
    # Page 7 never changes, page 4 (weekly) not within its first change.
    assert (await fetch(session, site.url("/changing/7")))[2]["ETag"] == '"7-0"'
    first_weekly = change_times(4, 400 * DAY, seed=SEED)[0]
    await post_json(session, f"{clock}?t={first_weekly!r}")
    assert (await fetch(session, site.url("/changing/4")))[2]["ETag"] == '"4-1"'
    assert (await fetch(session, site.url(f"/changing/{DEFAULT_CHANGING_PAGES}")))[0] == 404


async def test_truth_matches_change_times(site: LocalSite, session: aiohttp.ClientSession) -> None:
    now = 9 * DAY + 0.5
    await post_json(session, site.url(f"/control/changing/clock?t={now!r}"))
    for _ in range(3):
        await fetch(session, site.url("/changing/1"))
    truth = await get_json(session, site.url("/control/changing"))
    assert truth["t"] == now and len(truth["pages"]) == DEFAULT_CHANGING_PAGES
    for n in range(DEFAULT_CHANGING_PAGES):
        changes = change_times(n, now, seed=SEED)
        assert truth["pages"][str(n)] == {
            "version": len(changes),
            "rate_per_hour": DEFAULT_CHANGING_RATES[n % 10],
            "changes": changes,
            "requests": 3 if n == 1 else 0,
        }
        assert version_at(n, now, seed=SEED) == len(changes)
    assert truth["pages"]["0"]["version"] > 100 and truth["pages"]["9"]["version"] == 0
    one = await get_json(session, site.url("/control/changing/1"))
    assert one == {"t": now, "pages": {"1": truth["pages"]["1"]}}


def test_consecutive_versions_differ_as_documented() -> None:
    for n in (0, 3, 39):
        for v in range(1, 40):
            old, new = changing_page(n, v - 1, seed=SEED), changing_page(n, v, seed=SEED)
            changed = [i for i in range(PARAGRAPHS) if old.paragraphs[i] != new.paragraphs[i]]
            assert changed == [v % PARAGRAPHS]
            assert new.paragraphs[v % PARAGRAPHS].startswith(f"Version {v} says ")
            assert (old.title != new.title) == (v % 3 == 0)
            assert new.title == f"Changing page {n} (edition {v // 3})"
            assert (old.price != new.price) == (v % 4 == 1)
            # The index and the next page stay; one link is added, the oldest added one goes at
            # even versions from 4 on.
            assert new.links[:2] == old.links[:2] == ["/changing/", f"/changing/{(n + 1) % 40}"]
            dropped = 1 if v % 2 == 0 and v >= 4 else 0
            assert new.links[2:] == old.links[2 + dropped :] + [new.links[-1]]
            assert len(set(new.links)) == len(new.links)  # distinct while pages remain
            assert f"/changing/{n}" not in new.links
            assert readable(served(n, v - 1)) != readable(served(n, v))
    assert changing_page(3, 0, seed=SEED).title == "Changing page 3 (edition 0)"
    assert len(changing_page(3, 0, seed=SEED).paragraphs) == PARAGRAPHS


async def test_noise_varies_and_is_no_change(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    first = await fetch(session, site.url("/changing/2"))
    second = await fetch(session, site.url("/changing/2"))
    assert first[0] == second[0] == 200
    assert first[1] != second[1]
    assert NOISE.sub("", first[1]) == NOISE.sub("", second[1])
    assert first[2]["ETag"] == second[2]["ETag"] and first[2]["Content-Type"] == (
        "text/html; charset=utf-8"
    )
    assert '<span class="views">1 views</span>' in first[1]
    assert '<span class="views">2 views</span>' in second[1]
    assert len(NOISE.findall(first[1])) == 3  # the two served times and the counter
    assert '<span class="price">$' in first[1]


async def test_etag_gives_304_until_the_version_changes(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    times = change_times(0, DAY, seed=SEED)
    url, clock = site.url("/changing/0"), site.url("/control/changing/clock")
    status, _, headers = await fetch(session, url)
    assert status == 200 and headers["ETag"] == '"0-0"'
    assert headers["Last-Modified"] == "Thu, 01 Jan 2026 00:00:00 GMT"
    assert (await fetch(session, url, {"If-None-Match": '"0-0"'}))[:2] == (304, "")
    await post_json(session, f"{clock}?t={times[1] - 0.001!r}")  # version 1, until times[1]
    status, _, headers = await fetch(session, url, {"If-None-Match": '"0-0"'})
    assert status == 200 and headers["ETag"] == '"0-1"'
    etag, modified = headers["ETag"], headers["Last-Modified"]
    changed = (EPOCH + timedelta(seconds=times[0])).replace(microsecond=0)
    assert modified == changed.strftime("%a, %d %b %Y %H:%M:%S GMT")
    assert (await fetch(session, url, {"If-None-Match": etag}))[:2] == (304, "")
    assert (await fetch(session, url, {"If-None-Match": f'"x", W/{etag}'}))[:2] == (304, "")
    assert (await fetch(session, url, {"If-Modified-Since": modified}))[:2] == (304, "")
    old_date = "Wed, 31 Dec 2025 00:00:00 GMT"
    assert (await fetch(session, url, {"If-Modified-Since": old_date}))[0] == 200
    await post_json(session, f"{clock}?t={times[1]!r}")
    status, body, headers = await fetch(session, url, {"If-None-Match": etag})
    assert status == 200 and headers["ETag"] == '"0-2"' and "Version 2 says" in body
    truth = await get_json(session, site.url("/control/changing/0"))
    assert truth["pages"]["0"]["requests"] == 8  # 304s are requests too


async def test_sitemap_has_lastmod_and_changefreq(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    now = 3 * DAY
    await post_json(session, site.url(f"/control/changing/clock?t={now!r}"))
    status, text, headers = await fetch(session, site.url("/changing/sitemap.xml"))
    assert status == 200 and headers["Content-Type"].startswith("application/xml")
    urls = ET.fromstring(text).findall("s:url", NS)
    assert [u.findtext("s:loc", namespaces=NS) for u in urls] == [
        site.url(f"/changing/{n}") for n in range(DEFAULT_CHANGING_PAGES)
    ]
    freqs = ["hourly", "daily", "daily", "daily", "weekly", "weekly", "weekly"] + ["never"] * 3
    for n, url in enumerate(urls):
        changes = change_times(n, now, seed=SEED)
        last = (EPOCH + timedelta(seconds=changes[-1] if changes else 0)).replace(microsecond=0)
        assert url.findtext("s:lastmod", namespaces=NS) == last.strftime("%Y-%m-%dT%H:%M:%SZ")
        assert url.findtext("s:changefreq", namespaces=NS) == freqs[n % 10]
    assert urls[9].findtext("s:lastmod", namespaces=NS) == "2026-01-01T00:00:00Z"
    status, index, _ = await fetch(session, site.url("/changing/"))
    assert status == 200
    assert re.findall(r'href="(/changing/\d+)"', index) == [
        f"/changing/{n}" for n in range(DEFAULT_CHANGING_PAGES)
    ]


async def test_clock_refuses_going_back(site: LocalSite, session: aiohttp.ClientSession) -> None:
    clock = site.url("/control/changing/clock")
    assert await post_json(session, f"{clock}?t=100") == {"t": 100.0}
    for query in ("t=50", "advance=-1", "t=abc", "t=nan", "t=inf", "", "t=200&advance=1"):
        async with session.post(f"{clock}?{query}") as response:
            assert response.status == 400, query
            name = query.split("=")[0]
            if name:
                assert f"{name}" in await response.text()
    async with session.post(f"{clock}?t=50") as response:
        assert "t=50" in await response.text()
    assert await get_json(session, clock) == {"t": 100.0}
    assert await post_json(session, f"{clock}?t=100") == {"t": 100.0}  # equal is not back


async def test_reset_forgets_the_clock_and_the_views(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    await post_json(session, site.url("/control/changing/clock?advance=86400"))
    await fetch(session, site.url("/changing/0"))
    async with session.post(site.url("/control/reset")) as response:
        assert response.status == 200
    truth = await get_json(session, site.url("/control/changing/0"))
    assert truth == {
        "t": 0.0,
        "pages": {"0": {"version": 0, "rate_per_hour": 1.0, "changes": [], "requests": 0}},
    }
    _, body, _ = await fetch(session, site.url("/changing/0"))
    assert '<span class="views">1 views</span>' in body


async def test_custom_rates_and_count(session: aiohttp.ClientSession) -> None:
    # A page changing 3600 times an hour changes about once a site second; rate 0 never.
    # `LocalSite` takes no changing parameters: its app is swapped for one built with them.
    site = LocalSite(pages=1, page_bytes=0)
    site.app = build_site(pages=1, page_bytes=0, seed=1, changing_pages=3, changing_rates=[3600, 0])
    async with site:
        await post_json(session, site.url("/control/changing/clock?t=100"))
        truth = await get_json(session, site.url("/control/changing"))
        assert list(truth["pages"]) == ["0", "1", "2"]
        assert [truth["pages"][n]["rate_per_hour"] for n in "012"] == [3600, 0, 3600]
        assert truth["pages"]["0"]["changes"] == change_times(0, 100, seed=1, rates=[3600, 0])
        assert 50 < truth["pages"]["0"]["version"] < 150 and truth["pages"]["1"]["version"] == 0
        assert (await fetch(session, site.url("/changing/3")))[0] == 404
        sitemap = (await fetch(session, site.url("/changing/sitemap.xml")))[1]
        assert sitemap.count("<changefreq>hourly</changefreq>") == 2 and "never" in sitemap


def test_default_mix_of_rates() -> None:
    assert DEFAULT_CHANGING_RATES == (1.0, *[1 / 24] * 3, *[1 / 168] * 3, 0.0, 0.0, 0.0)
    year = 365 * DAY
    counts = [len(change_times(n, year, seed=SEED)) for n in range(DEFAULT_CHANGING_PAGES)]
    for n, count in enumerate(counts):
        expected = DEFAULT_CHANGING_RATES[n % 10] * year / HOUR
        # Poisson: the count is within 5 standard deviations of its mean (a never page: 0).
        assert abs(count - expected) <= 5 * expected**0.5, (n, count, expected)


def test_bad_parameters_are_refused() -> None:
    for rates in ([], [-1.0], [float("nan")], [float("inf")]):
        with pytest.raises(ValueError, match="changing_rates"):
            build_site(pages=1, changing_rates=rates)
    with pytest.raises(ValueError, match="changing_pages"):
        build_site(pages=1, changing_pages=-1)
    with pytest.raises(ValueError):
        change_times(0, float("inf"))
    with pytest.raises(ValueError):
        changing_page(40, 0)


def test_pure_functions_are_deterministic_per_seed() -> None:
    at = datetime(2026, 11, 29, 12, 34, 56, tzinfo=UTC)
    for seed in (0, 1):
        assert change_times(0, DAY, seed=seed) == change_times(0, DAY, seed=seed)
        assert version_at(0, DAY, seed=seed) == version_at(0, DAY, seed=seed)
        assert changing_page(3, 7, seed=seed) == changing_page(3, 7, seed=seed)
        page = changing_page(3, 7, seed=seed)
        assert changing_html(page, served_at=at, views=4) == changing_html(
            page, served_at=at, views=4
        )
    assert change_times(0, DAY, seed=0) != change_times(0, DAY, seed=1)
    # Versions of two seeds part within a day for some time of it.
    assert any(version_at(0, t, seed=0) != version_at(0, t, seed=1) for t in range(0, 86400, 600))
    assert changing_page(3, 7, seed=0) != changing_page(3, 7, seed=1)
    first, other = changing_page(3, 7, seed=0), changing_page(3, 7, seed=1)
    assert changing_html(first, served_at=at, views=4) != changing_html(
        other, served_at=at, views=4
    )
    text = changing_html(first, served_at=at, views=4)
    assert "Served Sun, 29 Nov 2026 12:34:56 GMT" in text and "Served 2026-11-29 12:34:56" in text
