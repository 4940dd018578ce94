"""The sitemap doors (`/doors/`, robots.txt's `Sitemap:` lines, `/sitemap.xml`), fetched from a
public site built with `internal_base`, `other_origin` and `cross_submit`, served for real."""

import ipaddress
import re
import socket
from collections.abc import AsyncIterator

import aiohttp
import pytest

from scrapeflow_dagster.site.adversary.doors import (
    INDEX_PATH,
    MOVED_PATH,
    OTHER_ORIGIN_PAGE,
    OWN_PAGES,
    PAGES_PATH,
    REDIRECTED_PAGE,
    spellings,
)
from scrapeflow_dagster.site.app import build_site
from scrapeflow_dagster.site.server import LocalSite

INTERNAL = "http://127.0.0.1:4321"  # never fetched here: the doors only name it
OTHER = "http://11.0.0.2:8081"
ELSEWHERE = "http://11.0.0.3:8080/doors/pages.xml"
LOC = re.compile(r"<loc>([^<]*)</loc>")


@pytest.fixture
async def public() -> AsyncIterator[LocalSite]:
    async with LocalSite(
        pages=10,
        page_bytes=500,
        internal_base=INTERNAL,
        other_origin=OTHER,
        cross_submit=[ELSEWHERE],
    ) as s:
        yield s


async def text_of(session: aiohttp.ClientSession, url: str) -> str:
    async with session.get(url) as response:
        assert response.status == 200, url
        return await response.text()


async def locs(session: aiohttp.ClientSession, url: str) -> list[str]:
    async with session.get(url) as response:
        assert response.status == 200, url
        assert response.content_type == "application/xml"
        return LOC.findall(await response.text())


def test_each_spelling_is_the_address_to_the_c_library() -> None:
    hosts = spellings("127.0.0.1")
    assert hosts == [
        "127.0.0.1",
        "localhost",
        "2130706433",
        "127.1",
        "0x7f.0.0.1",
        "0177.0.0.1",
        "[::ffff:127.0.0.1]",
    ]
    # inet_aton reads the integer, two-part, hex and octal forms as resolvers do.
    for host in hosts[2:6]:
        assert socket.inet_aton(host) == socket.inet_aton("127.0.0.1"), host
    assert ipaddress.IPv6Address(hosts[6].strip("[]")).ipv4_mapped == ipaddress.IPv4Address(
        "127.0.0.1"
    )
    # Another address has no `localhost`, and its forms follow its own bytes.
    assert spellings("10.1.2.3") == [
        "10.1.2.3",
        "167838211",
        "10.66051",
        "0xa.1.2.3",
        "012.1.2.3",
        "[::ffff:10.1.2.3]",
    ]


async def test_robots_txt_announces_the_internal_sitemap_the_doors_and_the_cross_submissions(
    public: LocalSite, session: aiohttp.ClientSession
) -> None:
    assert await text_of(session, public.url("/robots.txt")) == (
        "User-agent: *\n"
        "Disallow: /graph/private/\n"
        f"Sitemap: {INTERNAL}/sitemap.xml\n"
        f"Sitemap: {public.url(INDEX_PATH)}\n"
        f"Sitemap: {ELSEWHERE}\n"
    )


async def test_the_index_lists_its_pages_the_internal_sitemap_and_a_child_moved_inside(
    public: LocalSite, session: aiohttp.ClientSession
) -> None:
    assert await locs(session, public.url(INDEX_PATH)) == [
        public.url(PAGES_PATH),
        f"{INTERNAL}/sitemap.xml",
        public.url(MOVED_PATH),
    ]
    async with session.get(public.url(MOVED_PATH), allow_redirects=False) as response:
        assert response.status == 302
        assert response.headers["Location"] == f"{INTERNAL}/sitemap.xml"


async def test_the_urlset_lists_own_internal_redirecting_and_other_origin_pages(
    public: LocalSite, session: aiohttp.ClientSession
) -> None:
    listed = await locs(session, public.url(PAGES_PATH))
    assert listed == [
        *(public.url(f"/doors/page/{n}") for n in OWN_PAGES),
        "http://127.0.0.1:4321/page/1",
        "http://localhost:4321/page/2",
        "http://2130706433:4321/page/3",
        "http://127.1:4321/page/4",
        "http://0x7f.0.0.1:4321/page/5",
        "http://0177.0.0.1:4321/page/6",
        "http://[::ffff:127.0.0.1]:4321/page/7",
        public.url(f"/hostile/r/to?url=http%3A%2F%2F127.0.0.1%3A4321%2Fpage%2F{REDIRECTED_PAGE}"),
        f"{OTHER}/page/{OTHER_ORIGIN_PAGE}",
    ]
    # The listed own pages are the site's pages; the redirecting one leads inside.
    for n in OWN_PAGES:
        doors_page = await text_of(session, public.url(f"/doors/page/{n}"))
        assert doors_page == await text_of(session, public.url(f"/page/{n}"))
    async with session.get(listed[-2], allow_redirects=False) as response:
        assert response.status == 302
        assert response.headers["Location"] == f"{INTERNAL}/page/{REDIRECTED_PAGE}"


async def test_a_site_without_internal_base_has_no_doors(session: aiohttp.ClientSession) -> None:
    async with LocalSite(pages=3, page_bytes=500, cross_submit=[ELSEWHERE]) as plain:
        for path in (INDEX_PATH, PAGES_PATH, MOVED_PATH, "/doors/page/0"):
            async with session.get(plain.url(path), allow_redirects=False) as response:
                assert response.status == 404, path
        assert await text_of(session, plain.url("/robots.txt")) == (
            f"User-agent: *\nDisallow: /graph/private/\nSitemap: {ELSEWHERE}\n"
        )


async def test_sitemap_xml_lists_every_page_on_the_host_it_was_asked_by(
    session: aiohttp.ClientSession,
) -> None:
    async with LocalSite(pages=3, page_bytes=500) as site:
        assert await locs(session, site.url("/sitemap.xml")) == [
            site.url(f"/page/{n}") for n in range(3)
        ]
        by_name = f"http://localhost:{site.port}"
        assert await locs(session, f"{by_name}/sitemap.xml") == [
            f"{by_name}/page/{n}" for n in range(3)
        ]


@pytest.mark.parametrize(
    "internal_base",
    ["http://localhost:4321", "http://127.0.0.1", "ftp://127.0.0.1:21", "http://127.0.0.1:1/x"],
)
def test_internal_base_must_be_an_ipv4_origin_with_a_port(internal_base: str) -> None:
    with pytest.raises(ValueError, match="internal_base must be http://IPv4:PORT"):
        build_site(pages=1, internal_base=internal_base)
