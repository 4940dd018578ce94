"""The crawlable link graph, robots.txt and the request counts, fetched from the site for real."""

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit

import aiohttp
import pytest

from scrapeflow_dagster.site.crawling.graph import (
    graph_children,
    graph_depth,
    graph_parent,
    nodes_within_depth,
)
from scrapeflow_dagster.site.server import LocalSite

GRAPH_SIZE = 1093
HREF = re.compile(r'href="([^"]*)"')


@pytest.fixture
async def site() -> AsyncIterator[LocalSite]:
    async with LocalSite(pages=10, page_bytes=500, graph_size=GRAPH_SIZE) as s:
        yield s


async def get(session: aiohttp.ClientSession, url: str, **headers: str) -> aiohttp.ClientResponse:
    async with session.get(url, headers=headers) as response:
        await response.read()
        return response


async def counts(session: aiohttp.ClientSession, site: LocalSite) -> dict[str, Any]:
    async with session.get(site.url("/control/requests")) as response:
        assert response.status == 200
        return dict(await response.json())


async def hrefs(session: aiohttp.ClientSession, url: str) -> list[str]:
    async with session.get(url) as response:
        assert response.status == 200, url
        return HREF.findall(await response.text())


def test_tree_arithmetic() -> None:
    assert graph_children(0, size=GRAPH_SIZE) == [1, 2, 3]
    assert graph_children(4, size=GRAPH_SIZE) == [13, 14, 15]
    assert graph_children(364, size=GRAPH_SIZE) == []  # 3*364+1 = 1093: past the last node
    assert graph_children(363, size=GRAPH_SIZE) == [1090, 1091, 1092]
    assert [graph_parent(n) for n in (0, 1, 3, 4, 1092)] == [None, 0, 0, 1, 363]
    assert [graph_depth(n) for n in (0, 1, 3, 4, 12, 13, 39, 40, 1092)] == [
        0, 1, 1, 2, 2, 3, 3, 4, 6
    ]  # fmt: skip
    assert len(nodes_within_depth(3)) == 40
    assert all(graph_depth(n) <= 3 for n in nodes_within_depth(3))
    assert graph_depth(40) == 4
    assert len(nodes_within_depth(10, size=GRAPH_SIZE)) == GRAPH_SIZE


async def test_links_in_order_in_every_form(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    host = f"127.0.0.1:{site.port}"
    page = site.url("/graph/4")
    assert await hrefs(session, page) == [
        "13",
        "./14#part",
        f"http://{host}/graph/15#top",
        "../graph/1",
        "/graph/0#top",
        "/graph/private/4",
        "http://elsewhere.invalid/graph/4",
        "mailto:someone@example.com",
        "javascript:void(0)",
        "#footer",
    ]
    resolved = [urldefrag(urljoin(page, h)).url for h in (await hrefs(session, page))[:5]]
    assert resolved == [site.url(f"/graph/{n}") for n in (13, 14, 15, 1, 0)]
    # The absolute link follows the Host header the page was asked with.
    other = f"http://localhost:{site.port}/graph/4"
    assert (await hrefs(session, other))[2] == f"http://localhost:{site.port}/graph/15#top"
    root = await hrefs(session, site.url("/graph/0"))
    assert root[:4] == ["1", "./2#part", f"http://{host}/graph/3#top", "/graph/0#top"]
    async with session.get(site.url("/graph/0")) as response:
        assert "<title>Graph 0</title>" in await response.text()


async def test_leaves_have_no_child_links_and_pages_past_the_end_are_404(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    assert (await hrefs(session, site.url("/graph/1092")))[:2] == ["../graph/363", "/graph/0#top"]
    assert (await get(session, site.url(f"/graph/{GRAPH_SIZE}"))).status == 404
    assert (await get(session, site.url("/graph/private/7"))).status == 200


async def crawl(
    session: aiohttp.ClientSession, site: LocalSite, *, max_depth: int
) -> dict[str, int]:
    """A breadth-first crawl from /graph/0 that follows what a polite crawler must follow."""
    seen = {site.url("/graph/0"): 0}
    frontier = [site.url("/graph/0")]
    while frontier:
        next_frontier = []
        for url in frontier:
            for href in await hrefs(session, url):
                link = urldefrag(urljoin(url, href)).url
                parts = urlsplit(link)
                if (
                    parts.scheme != "http"
                    or parts.netloc != f"127.0.0.1:{site.port}"
                    or parts.path.startswith("/graph/private/")
                    or link in seen
                    or seen[url] + 1 > max_depth
                ):
                    continue
                seen[link] = seen[url] + 1
                next_frontier.append(link)
        frontier = next_frontier
    return seen


async def test_a_crawl_within_depth_3_finds_exactly_40_pages(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    found = await crawl(session, site, max_depth=3)
    assert sorted(found) == sorted(site.url(f"/graph/{n}") for n in nodes_within_depth(3))
    assert len(found) == 40
    seen = await counts(session, site)
    assert sum(seen["paths"].values()) == 40  # each page once; the counts skip /control/
    assert not any(path.startswith("/graph/private/") for path in seen["paths"])
    assert all(n == 1 for n in seen["paths"].values())


async def test_robots_txt_with_and_without_crawl_delay(session: aiohttp.ClientSession) -> None:
    async with LocalSite(pages=1) as plain, LocalSite(pages=1, crawl_delay_seconds=0.5) as slow:
        async with session.get(plain.url("/robots.txt")) as response:
            assert response.status == 200
            assert await response.text() == "User-agent: *\nDisallow: /graph/private/\n"
        for _ in range(3):
            async with session.get(slow.url("/robots.txt")) as response:
                text = await response.text()
        assert text == "User-agent: *\nDisallow: /graph/private/\nCrawl-delay: 0.5\n"
        assert (await counts(session, slow))["paths"] == {"/robots.txt": 3}
        assert (await counts(session, plain))["paths"] == {"/robots.txt": 1}


async def test_graph_pages_answer_304_to_matching_validators(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    url = site.url("/graph/5")
    first = await get(session, url)
    etag, modified = first.headers["ETag"], first.headers["Last-Modified"]
    assert (await get(session, url, **{"If-None-Match": etag})).status == 304
    assert (await get(session, url, **{"If-Modified-Since": modified})).status == 304
    assert (await get(session, url, **{"If-None-Match": '"other"'})).status == 200
    seen = await counts(session, site)
    assert seen["statuses"] == {"/graph/5": {"200": 2, "304": 2}}
    assert seen["paths"] == {"/graph/5": 4}


async def test_resets_zero_the_counts(site: LocalSite, session: aiohttp.ClientSession) -> None:
    await get(session, site.url("/graph/1"))
    await get(session, site.url("/status/503"))
    seen = await counts(session, site)
    assert seen["paths"] == {"/graph/1": 1, "/status/503": 1}
    assert seen["statuses"]["/status/503"] == {"503": 1}
    async with session.post(site.url("/control/requests/reset")) as response:
        assert response.status == 200
    assert await counts(session, site) == {
        "paths": {},
        "hosts": {},
        "statuses": {},
        "max_in_flight": {},
        "max_in_flight_by_client": {},
        "in_flight": {f"127.0.0.1:{site.port}": 0},
    }
    await get(session, site.url("/graph/2"))
    async with session.post(site.url("/control/reset")) as response:
        assert response.status == 200
    assert (await counts(session, site))["paths"] == {}


async def test_the_host_log_counts_each_path_under_the_name_it_was_asked_by(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    by_name = f"http://localhost:{site.port}"
    for url in (site.url("/graph/1"), site.url("/graph/1"), f"{by_name}/graph/2"):
        await get(session, url)
    await get(session, f"{by_name}/status/404")
    await get(session, site.url("/control/cached"))  # control routes are never counted
    seen = await counts(session, site)
    # One server, two hosts: what reached one name is told apart from what reached the other.
    assert seen["hosts"] == {
        f"127.0.0.1:{site.port}": {"/graph/1": 2},
        f"localhost:{site.port}": {"/graph/2": 1, "/status/404": 1},
    }
    assert seen["paths"] == {"/graph/1": 2, "/graph/2": 1, "/status/404": 1}
    async with session.post(site.url("/control/requests/reset")):
        pass
    assert (await counts(session, site))["hosts"] == {}


async def test_in_flight_is_measured_per_host_header(session: aiohttp.ClientSession) -> None:
    # Each page waits 2 s, far longer than it takes to send 8 requests, so they all overlap.
    async with LocalSite(pages=1, graph_delay_seconds=2.0) as site:
        ip = [site.url(f"/graph/{n}") for n in range(5)]
        name = [f"http://localhost:{site.port}/graph/{n}" for n in range(3)]
        answers = await asyncio.gather(*(get(session, url) for url in ip + name))
        assert [a.status for a in answers] == [200] * 8
        seen = await counts(session, site)
        ip_host, name_host = f"127.0.0.1:{site.port}", f"localhost:{site.port}"
        assert seen["max_in_flight"] == {ip_host: 5, name_host: 3}
        assert seen["max_in_flight_by_client"][ip_host] == {"127.0.0.1": 5}  # one machine
        assert seen["in_flight"] == {ip_host: 0, name_host: 0}
        async with session.post(site.url("/control/requests/reset")):
            pass
        for url in ip[:3]:  # one after the other: never more than one in flight
            await get(session, url)
        assert (await counts(session, site))["max_in_flight"] == {ip_host: 1}
