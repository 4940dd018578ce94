"""The one gate, at the engine: robots.txt redirects, sitemap files, their entries and children
go out through the address guard, robots.txt, host slots and the same caches as pages.

Real aiohttp sites on this machine: "public" ones on 127.0.0.2 (a network the guard is told to
allow, so it stands for the internet; their tasks carry `trust: public`, as URLs learned from
the web do, since a user's own task on a loopback address would be an intranet task) and an
"internal" one on 127.0.0.1 (refused). Each counts its requests by Host and path.
"""

import dataclasses
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.crawl.sitemaps.reading import (
    OTHER_HOST,
    REFUSED_ADDRESS,
    SitemapReading,
    read_sitemaps,
)
from scrapeflow_dagster.engine.errors import AddressRefusedError, ScrapeError
from scrapeflow_dagster.engine.gate.fetch import fetch
from scrapeflow_dagster.engine.gate.opening import open_gate
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.tasks.intake import LineError, build_task
from scrapeflow_dagster.site.adversary.doors import spellings
from scrapeflow_dagster_tests.conftest import fast_settings
from scrapeflow_dagster_tests.engine.gate.sites import Site, index, redirect, text, urlset

PUBLIC_ADDRESS = "127.0.0.2"


@pytest.fixture
async def sites() -> AsyncIterator[tuple[Site, Site, Site]]:
    """(public, another public origin, internal)."""
    made = [Site(PUBLIC_ADDRESS), Site(PUBLIC_ADDRESS), Site("127.0.0.1")]
    for site in made:
        await site.start()
    yield made[0], made[1], made[2]
    for site in made:
        await site.stop()


def settings() -> ScrapeSettings:
    return dataclasses.replace(fast_settings(), allowed_networks=(f"{PUBLIC_ADDRESS}/32",))


async def test_a_robots_txt_redirect_to_an_internal_address_is_refused_before_it_is_sent(
    sites: tuple[Site, Site, Site], tmp_path: Path
) -> None:
    public, _, internal = sites
    public.routes["/robots.txt"] = redirect(f"{internal.base}/robots.txt")
    public.routes["/page"] = text("public page")
    async with open_gate(tmp_path, settings()) as context:
        with pytest.raises(AddressRefusedError, match="robots.txt redirect to .*loopback"):
            await fetch(context, {"url": f"{public.base}/page", "trust": "public"})
    assert internal.seen == Counter()
    assert public.seen == Counter({(f"{PUBLIC_ADDRESS}:{public.port}", "/robots.txt"): 1})


async def test_a_public_task_is_guarded_whatever_address_its_url_names(
    sites: tuple[Site, Site, Site], tmp_path: Path
) -> None:
    """Trust comes from the task's provenance: a URL learned from a public page is refused
    on an internal address although a user's own task there would be fetched."""
    _, _, internal = sites
    internal.routes["/robots.txt"] = text("")
    internal.routes["/page"] = text("internal page")
    url = f"{internal.base}/page"
    async with open_gate(tmp_path, settings()) as context:
        with pytest.raises(ScrapeError, match="loopback"):
            await fetch(context, {"url": url, "trust": "public"})
        assert internal.seen == Counter()
        fetched = await fetch(context, {"url": url})  # a user's own intranet task
    assert fetched.body == b"internal page"
    assert fetched.intranet  # its links may lead inside
    with pytest.raises(ScrapeError, match="trust must be one of"):
        async with open_gate(tmp_path, settings()) as context:
            await fetch(context, {"url": url, "trust": "publik"})


def test_a_task_file_line_with_an_unknown_trust_is_refused_by_name() -> None:
    line = build_task({"url": "http://example.com/", "trust": "everyone"}, Path("t.csv"), 3)
    assert isinstance(line, LineError)
    assert "trust must be one of public, intranet, got 'everyone'" in str(line)


async def read(
    tmp_path: Path, sitemaps: list[str], seeds: list[str], *, fresh_seconds: float | None = None
) -> SitemapReading:
    given = settings()
    if fresh_seconds is not None:
        polite = dataclasses.replace(given.polite, robots_max_age_seconds=fresh_seconds)
        given = dataclasses.replace(given, polite=polite)
    async with open_gate(tmp_path, given) as context:
        seeds_params = [{"url": url, "trust": "public"} for url in seeds]
        return await read_sitemaps(context, sitemaps, robots_of=seeds_params)


async def test_sitemaps_go_through_the_gate_and_obey_the_host_rule(
    sites: tuple[Site, Site, Site], tmp_path: Path
) -> None:
    public, other, internal = sites
    inside = internal.base
    # Every door of the public site leads inside, in several spellings.
    # Every door names the internal site in every spelling a browser or resolver reads.
    names = [f"http://{host}:{internal.port}" for host in spellings("127.0.0.1")]
    announced = "".join(f"Sitemap: {name}/sitemap.xml\n" for name in names)
    public.routes["/robots.txt"] = text(f"{announced}Sitemap: {public.base}/index.xml\n")
    public.routes["/index.xml"] = index(
        f"{public.base}/pages.xml",
        *(f"{name}/child.xml" for name in names),
        f"{public.base}/moved.xml",  # redirects inside
        f"{other.base}/elsewhere.xml",  # another origin, not cross-submitted
    )
    public.routes["/moved.xml"] = redirect(f"{inside}/sitemap.xml")
    public.routes["/pages.xml"] = urlset(
        f"{public.base}/a",
        f"{public.base}/b",
        f"http://2130706433:{internal.port}/secret",
        f"http://127.1:{internal.port}/secret",
        f"http://[::ffff:127.0.0.1]:{internal.port}/secret",
        f"{other.base}/c",  # another origin: skipped unless its robots.txt announces us
    )
    other.routes["/robots.txt"] = text("")
    internal.routes["/sitemap.xml"] = urlset(f"{inside}/secret")

    reading = await read(tmp_path, [], [f"{public.base}/"])

    assert internal.seen == Counter()
    assert [page.url for page in reading.pages] == [f"{public.base}/a", f"{public.base}/b"]
    assert {page.trust for page in reading.pages} == {"public"}
    skipped = Counter(s.outcome for s in reading.skipped)
    # robots.txt's internal Sitemap lines and the index's internal children (one per
    # spelling each), three internal entries.
    assert skipped == Counter({REFUSED_ADDRESS: 2 * len(names) + 3, OTHER_HOST: 2})
    assert any("moved.xml" in problem and "loopback" in problem for problem in reading.problems)
    assert (f"{PUBLIC_ADDRESS}:{other.port}", "/elsewhere.xml") not in other.seen
    assert (f"{PUBLIC_ADDRESS}:{other.port}", "/c") not in other.seen

    # Cross-submission: the other origin's robots.txt announces the public index.
    other.routes["/robots.txt"] = text(f"Sitemap: {public.base}/index.xml\n")
    crossed = await read(tmp_path / "fresh", [], [f"{public.base}/"])
    assert f"{other.base}/c" in [page.url for page in crossed.pages]
    assert internal.seen == Counter()

    # A second identical reading asks robots.txt nothing: the runs' cache answers.
    robots_before = public.seen[f"{PUBLIC_ADDRESS}:{public.port}", "/robots.txt"]
    await read(tmp_path, [], [f"{public.base}/"])
    assert public.seen[f"{PUBLIC_ADDRESS}:{public.port}", "/robots.txt"] == robots_before


async def test_an_intranet_sitemap_a_user_gives_lists_intranet_pages(
    sites: tuple[Site, Site, Site], tmp_path: Path
) -> None:
    """A user's own sitemap on an internal address is an intranet source: its pages (on its
    own origin) are read and inherit the intranet trust."""
    _, _, internal = sites
    internal.routes["/robots.txt"] = text("")
    internal.routes["/sitemap.xml"] = urlset(f"{internal.base}/wiki/a")
    reading = await read(tmp_path, [f"{internal.base}/sitemap.xml"], [])
    assert [(page.url, page.trust) for page in reading.pages] == [
        (f"{internal.base}/wiki/a", "intranet")
    ]


async def test_a_sitemap_read_again_is_taken_from_its_copy_then_asked_conditionally(
    sites: tuple[Site, Site, Site], tmp_path: Path
) -> None:
    """A crawl run again sends no request for sitemaps that were just read; once the copy is
    older than robots.txt's max age, a 304 keeps it."""
    public, _, _ = sites
    host = f"{PUBLIC_ADDRESS}:{public.port}"
    public.routes["/robots.txt"] = text(f"Sitemap: {public.base}/pages.xml\n")
    public.routes["/pages.xml"] = urlset(f"{public.base}/a", etag='"v1"')
    seeds = [f"{public.base}/"]

    first = await read(tmp_path, [], seeds)
    again = await read(tmp_path, [], seeds)
    assert public.seen == Counter({(host, "/robots.txt"): 1, (host, "/pages.xml"): 1})
    stale = await read(tmp_path, [], seeds, fresh_seconds=0)
    assert public.seen[host, "/pages.xml"] == 2  # asked again, answered 304
    pages = [[page.url for page in reading.pages] for reading in (first, again, stale)]
    assert pages == [[f"{public.base}/a"]] * 3
