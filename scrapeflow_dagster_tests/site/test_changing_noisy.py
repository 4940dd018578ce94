"""`/changing/noisy/{n}`: a changing page inside chrome that differs on every request (a menu, a
"Trending now" headline, a "Most read" box, a quote), served for real on loopback: the page's
own content follows its versions, the chrome follows the requests, and no answer is a 304."""

from collections.abc import AsyncIterator

import aiohttp
import pytest

from scrapeflow_dagster.site.content.changing import changing_page, chrome_of, version_at
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.site.test_changing import SEED, fetch, post_json

DAY = 24 * 3600.0


@pytest.fixture
async def site() -> AsyncIterator[LocalSite]:
    async with LocalSite(pages=1, page_bytes=0, seed=SEED) as s:
        yield s


async def test_the_noisy_page_shows_its_version_inside_chrome_drawn_per_request(
    site: LocalSite,
) -> None:
    n = 0  # an hourly page: it changes within a day
    url = site.url(f"/changing/noisy/{n}")
    async with aiohttp.ClientSession() as session:
        answers = [await fetch(session, url) for _ in range(3)]
        for views, (status, text, headers) in enumerate(answers, start=1):
            assert status == 200 and "ETag" not in headers and "Last-Modified" not in headers
            trending, most_read, quote = chrome_of(n, views, seed=SEED)
            for shown in (trending, *most_read, quote):
                assert shown in text
            for paragraph in changing_page(n, 0, seed=SEED).paragraphs:
                assert "<main>" in text and paragraph in text
        chromes = [chrome_of(n, views, seed=SEED) for views in (1, 2, 3)]
        assert len({(t, tuple(m), q) for t, m, q in chromes}) == 3
        # Asked again with what a conditional client sends, it still answers in full.
        status, _, _ = await fetch(session, url, {"If-None-Match": f'"{n}-0"'})
        assert status == 200

        await post_json(session, site.url(f"/control/changing/clock?t={DAY}"))
        version = version_at(n, DAY, seed=SEED)
        assert version > 0
        _, text, _ = await fetch(session, url)
        for paragraph in changing_page(n, version, seed=SEED).paragraphs:
            assert paragraph in text
        truth = await (await session.get(site.url(f"/control/changing/{n}"))).json()
        assert truth["pages"][str(n)]["requests"] == 5  # a request for it counts as page n's
