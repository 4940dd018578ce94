"""The sitemap reader's own doors, at the engine, with real parts on this machine: aiohttp sites
on 127.0.0.2 standing for the internet (a network the guard is told to allow; the seeds carry
`trust: public`, as URLs learned from the web do) and a real forward proxy on 127.0.0.1
(`fakes.forward_proxy`) that lists what it forwarded.

- the robots.txt reads of the reader (the seeds', and another origin's for cross-submission)
  go through the proxy, and never direct when no proxy is left;
- one sitemap naming many other origins costs no more than `max_other_origins_per_reading`
  robots.txt reads: the entries past it are skipped and counted (`over_budget`);
- no URL but http(s) is fetched, whether a sitemap lists it or robots.txt announces it
  (Crawlee's CVE-2026-46497: a `file:` sitemap read from disk).

Public hosts (where an intranet seed's robots.txt leads) are in `test_sitemap_public_doors.py`.
"""

import dataclasses
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.crawl.scope import OUT_OF_SCOPE, OVER_BUDGET
from scrapeflow_dagster.engine.crawl.sitemaps.reading import SitemapReading, read_sitemaps
from scrapeflow_dagster.engine.gate.opening import open_gate
from scrapeflow_dagster.engine.proxies import ProxyProvider, ProxyProviderFromList
from scrapeflow_dagster.engine.settings import ScrapeSettings, SitemapSettings
from scrapeflow_dagster_tests.conftest import fast_settings
from scrapeflow_dagster_tests.engine.gate.sites import Site, index, text, urlset
from scrapeflow_dagster_tests.fakes.forward_proxy import ForwardProxy, closed_port_url

PUBLIC_ADDRESS = "127.0.0.2"
ROBOTS = "/robots.txt"


@pytest.fixture
async def sites() -> AsyncIterator[list[Site]]:
    """Seven public sites: the seed's, then six other origins."""
    made = [Site(PUBLIC_ADDRESS) for _ in range(7)]
    for site in made:
        await site.start()
    yield made
    for site in made:
        await site.stop()


def settings(*, max_other_origins: int | None = None) -> ScrapeSettings:
    given = dataclasses.replace(fast_settings(), allowed_networks=(f"{PUBLIC_ADDRESS}/32",))
    if max_other_origins is not None:
        budget = SitemapSettings(max_other_origins_per_reading=max_other_origins)
        given = dataclasses.replace(given, sitemaps=budget)
    return given


async def read(
    folder: Path,
    given: ScrapeSettings,
    *,
    seeds: list[str] = [],  # noqa: B006 (read only)
    sitemaps: list[str] = [],  # noqa: B006 (read only)
    proxies: ProxyProvider | None = None,
) -> tuple[SitemapReading, int]:
    """The reading, and how many robots.txt requests the gate's cache sent."""
    async with open_gate(folder, given, proxy_provider=proxies) as context:
        seeds_params = [{"url": url, "trust": "public"} for url in seeds]
        reading = await read_sitemaps(context, sitemaps, robots_of=seeds_params)
        assert context.polite is not None and context.polite.robots is not None
        return reading, context.polite.robots.fetches


def robots_seen(site: Site) -> int:
    return site.seen[f"{PUBLIC_ADDRESS}:{site.port}", ROBOTS]


async def test_the_readers_robots_txt_reads_go_through_the_proxy_never_direct(
    sites: list[Site], tmp_path: Path
) -> None:
    public, other = sites[0], sites[1]
    public.routes[ROBOTS] = text(f"Sitemap: {public.base}/pages.xml\n")
    # Another origin's page: its robots.txt is read for cross-submission (and announces it).
    public.routes["/pages.xml"] = urlset(f"{public.base}/a", f"{other.base}/b")
    other.routes[ROBOTS] = text(f"Sitemap: {public.base}/pages.xml\n")

    async with ForwardProxy() as proxy:
        reading, _ = await read(
            tmp_path / "proxied",
            settings(),
            seeds=[f"{public.base}/"],
            proxies=ProxyProviderFromList([proxy.url]),
        )
        forwarded = Counter(proxy.forwarded)

    assert [page.url for page in reading.pages] == [f"{public.base}/a", f"{other.base}/b"]
    # Every robots.txt request either site saw came through the proxy.
    assert forwarded[f"{public.base}{ROBOTS}"] == robots_seen(public) == 1, forwarded
    assert forwarded[f"{other.base}{ROBOTS}"] == robots_seen(other) == 1, forwarded
    assert forwarded[f"{public.base}/pages.xml"] == 1

    # Only a dead proxy left: robots.txt is not read at all (never direct), and said so.
    dead, _ = await read(
        tmp_path / "dead",
        settings(),
        seeds=[f"{public.base}/"],
        proxies=ProxyProviderFromList([closed_port_url()]),
    )
    assert robots_seen(public) == 1 and robots_seen(other) == 1
    assert dead.pages == []
    assert any(p.startswith(f"robots.txt of http://{PUBLIC_ADDRESS}") for p in dead.problems)


async def test_a_sitemap_naming_many_origins_costs_at_most_the_budget(
    sites: list[Site], tmp_path: Path
) -> None:
    public, others = sites[0], sites[1:]
    public.routes[ROBOTS] = text("")
    # Every other origin announces the index: each would be a cross-submitted page.
    for site in others:
        site.routes[ROBOTS] = text(f"Sitemap: {public.base}/index.xml\n")
    entries = [f"{public.base}/own", *(f"{site.base}/page" for site in others)]
    public.routes["/index.xml"] = index(f"{public.base}/pages.xml", f"{public.base}/more.xml")
    public.routes["/pages.xml"] = urlset(*entries)
    # Listed again: an origin looked at costs nothing more, one past the budget stays skipped.
    public.routes["/more.xml"] = urlset(*entries[1:])

    reading, fetches = await read(
        tmp_path, settings(max_other_origins=2), sitemaps=[f"{public.base}/index.xml"]
    )

    # The first two other origins were looked at; the other four never asked.
    assert [robots_seen(site) for site in others] == [1, 1, 0, 0, 0, 0]
    assert fetches == 1 + 2  # the public site's own robots.txt (fetching the urlset), two more
    assert [page.url for page in reading.pages] == [*entries[:3], *entries[1:3]]
    skipped = [(s.url, s.outcome) for s in reading.skipped]
    assert skipped == [(url, OVER_BUDGET) for url in entries[3:] * 2]
    assert "past 2 other origins in one reading" in reading.skipped[0].reason
    told = [p for p in reading.problems if "max_other_origins_per_reading" in p]
    assert told == [
        "more than 2 other origins named: entries on the rest skipped "
        "(max_other_origins_per_reading)"
    ]


async def test_no_sitemap_or_robots_txt_but_http_ones_is_ever_fetched(
    sites: list[Site], tmp_path: Path
) -> None:
    """Crawlee's CVE-2026-46497: a `Sitemap:` line or a sitemap entry in another scheme
    (`file:` read from disk, `ftp:`, `gopher:`, `data:`) is skipped, never fetched, and no
    robots.txt of such an "origin" is asked (cross-submission)."""
    public = sites[0]
    port = public.port
    foreign = [
        "file:///etc/passwd",
        f"ftp://{PUBLIC_ADDRESS}:{port}/sitemap.xml",
        f"gopher://{PUBLIC_ADDRESS}:{port}/_GET%20/sitemap.xml",
        "data:application/xml,%3Curlset%3E%3C/urlset%3E",
    ]
    announced = "".join(f"Sitemap: {url}\n" for url in foreign)
    public.routes[ROBOTS] = text(f"{announced}Sitemap: {public.base}/index.xml\n")
    public.routes["/index.xml"] = index(*foreign, f"{public.base}/pages.xml")
    public.routes["/pages.xml"] = urlset(f"{public.base}/a", *foreign)

    reading, fetches = await read(
        tmp_path,
        settings(),
        seeds=[f"{public.base}/"],
        sitemaps=["file:///etc/passwd", f"ftp://{PUBLIC_ADDRESS}:{port}/given.xml"],
    )

    assert fetches == 1  # the public site's robots.txt, nothing else
    assert [page.url for page in reading.pages] == [f"{public.base}/a"]
    assert reading.files == [f"{public.base}/index.xml", f"{public.base}/pages.xml"]
    # robots.txt's lines and the urlset's entries: each skipped (the parser already drops an
    # index's children that are no http(s) URL).
    outcomes = Counter((s.url, s.outcome) for s in reading.skipped)
    assert outcomes == Counter({(url, OUT_OF_SCOPE): 2 for url in foreign})
    assert public.seen == Counter(
        {(f"{PUBLIC_ADDRESS}:{port}", path): 1 for path in (ROBOTS, "/index.xml", "/pages.xml")}
    )
    given = [p for p in reading.problems if "given.xml" in p or "passwd" in p]
    assert given == [
        "'file:///etc/passwd' is not an http(s) URL: never fetched",
        f"'ftp://{PUBLIC_ADDRESS}:{port}/given.xml' is not an http(s) URL: never fetched",
    ]
