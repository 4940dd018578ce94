"""Advisory regressions (see test_advisories.py): sitemaps and robots.txt as a way inside.

- Crawlee for Python CVE-2026-46497: URLs named by a public robots.txt (`Sitemap:` lines), a
  public sitemap, or a public page's links were fetched whatever they named: internal
  addresses, `file:` and `ftp:` URLs.
- LangChain SitemapLoader (langchain issue 38814): a nested sitemap of an index skipped the
  same-domain check, so an index on a public host led to a child on any host.

The sitemap reader runs on an `open_gate` context, as `scrapeflow crawl` runs it; the whole
crawl once through the real `scrapeflow crawl` command.
"""

import asyncio
from collections import Counter
from pathlib import Path

from scrapeflow_dagster.engine.crawl.sitemaps.reading import (
    OTHER_HOST,
    REFUSED_ADDRESS,
    SitemapReading,
    read_sitemaps,
)
from scrapeflow_dagster.engine.gate.opening import open_gate
from scrapeflow_dagster_tests.engine.gate.sites import Site, index, redirect, text, urlset
from scrapeflow_dagster_tests.reliability.advisory_sites import (
    Listener,
    one_try,
    only_robots,
)
from scrapeflow_dagster_tests.reliability.conftest import Homes
from scrapeflow_dagster_tests.reliability.helpers import read_all_statuses, scrapeflow


def internal_urls(internal: Site, listener: Listener, path: str) -> list[str]:
    """`path` on the internal site in several spellings, and the non-http doors."""
    port = internal.port
    return [
        f"http://127.0.0.1:{port}{path}",
        f"http://localhost:{port}{path}",
        f"http://2130706433:{port}{path}",
        f"http://[::ffff:127.0.0.1]:{port}{path}",
        f"ftp://127.0.0.1:{listener.port}{path}",
        "file:///etc/passwd",
    ]


async def read(folder: Path, sitemaps: list[str], seed: str | None = None) -> SitemapReading:
    robots_of = [{"url": seed}] if seed else []
    async with open_gate(folder, one_try()) as context:
        return await read_sitemaps(context, sitemaps, robots_of=robots_of)


async def test_cve_2026_46497_robots_txt_and_sitemap_naming_internal_or_non_http_urls(
    public: Site,
    internal: Site,
    listener: Listener,
    tmp_path: Path,
) -> None:
    doors = internal_urls(internal, listener, "/sitemap.xml")
    pages = internal_urls(internal, listener, "/secret")
    own = f"{public.base}/own-page"
    public.routes["/robots.txt"] = text(
        "User-agent: *\nDisallow:\n"
        + "".join(f"Sitemap: {url}\n" for url in [*doors, f"{public.base}/sitemap.xml"])
    )
    public.routes["/sitemap.xml"] = urlset(*pages, own)
    internal.routes["/sitemap.xml"] = urlset(f"http://127.0.0.1:{internal.port}/secret")
    internal.routes["/secret"] = text("internal secret")

    reading = await read(tmp_path, [], seed=f"{public.base}/")

    assert internal.seen == Counter(), internal.seen
    assert listener.connections == 0
    # Only the public site's own page is a page of the reading; every other entry was
    # skipped, never fetched.
    assert [page.url for page in reading.pages] == [own], reading
    assert reading.files == [f"{public.base}/sitemap.xml"], reading
    refused = {skip.url for skip in reading.skipped if skip.outcome == REFUSED_ADDRESS}
    assert {url for url in doors + pages if url.startswith("http")} <= refused, reading.skipped


async def test_cve_2026_46497_a_crawl_of_a_public_site_never_reaches_inside(
    public: Site,
    internal: Site,
    listener: Listener,
    homes: Homes,
) -> None:
    """Through `scrapeflow crawl`: the seed's robots.txt announces internal sitemaps, its
    sitemap lists internal pages, the seed page links inside and to `file:` and `ftp:` URLs,
    and one of its links redirects inside."""
    doors = internal_urls(internal, listener, "/sitemap.xml")
    pages = internal_urls(internal, listener, "/secret")
    public.routes["/robots.txt"] = text(
        "User-agent: *\nDisallow:\n"
        + "".join(f"Sitemap: {url}\n" for url in [*doors, f"{public.base}/sitemap.xml"])
    )
    public.routes["/sitemap.xml"] = urlset(*pages, f"{public.base}/listed")
    public.routes["/moved"] = redirect(f"http://127.0.0.1:{internal.port}/secret")
    links = [*pages, f"{public.base}/moved", f"{public.base}/listed"]
    public.routes["/"] = text(
        "<html><body>" + "".join(f'<a href="{url}">x</a>' for url in links) + "</body></html>",
        "text/html",
    )
    public.routes["/listed"] = text("<html><body>listed</body></html>", "text/html")
    seeds = homes.root / "seeds.txt"
    seeds.write_text(f"{public.base}/\n")

    done = await asyncio.to_thread(
        scrapeflow,
        ["crawl", str(seeds), "--max-depth", "1", "--scope", "domain"],
        homes.env(),
        timeout=300,
    )
    statuses = read_all_statuses(homes.layout.status_dir)

    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert internal.seen == Counter(), f"{internal.seen}\n{output}"
    assert listener.connections == 0
    urls = {status["params"]["url"]: status.get("scrape_status") for status in statuses.values()}
    assert urls[f"{public.base}/"] == "SUCCESS", urls
    assert urls[f"{public.base}/listed"] == "SUCCESS", urls
    assert not [url for url in urls if not url.startswith("http")], urls
    assert "root:" not in output


async def test_langchain_38814_nested_sitemap_on_another_host_is_not_followed(
    public: Site,
    internal: Site,
    tmp_path: Path,
) -> None:
    other = Site(public.address)  # another public origin (another port of the same address)
    await other.start()
    try:
        children = {
            "other": f"{other.base}/child.xml",
            "loopback": f"http://127.0.0.1:{internal.port}/child.xml",
            "localhost": f"http://localhost:{internal.port}/child.xml",
        }
        moved = f"{public.base}/moved.xml"
        public.routes["/index.xml"] = index(*children.values(), moved)
        public.routes["/moved.xml"] = redirect(children["loopback"])
        for site in (other, internal):
            site.routes["/child.xml"] = urlset(f"{site.base}/page")

        reading = await read(tmp_path, [f"{public.base}/index.xml"])
    finally:
        await other.stop()

    assert internal.seen == Counter(), internal.seen
    assert "/child.xml" not in {path for _, path in only_robots(other)}, other.seen
    outcomes = {skip.url: skip.outcome for skip in reading.skipped}
    assert outcomes == {
        children["other"]: OTHER_HOST,
        children["loopback"]: REFUSED_ADDRESS,
        children["localhost"]: REFUSED_ADDRESS,
    }, reading.skipped
    # The same-site child that redirects inside is refused at the hop, named in the problems.
    assert any(
        problem.startswith(f"{moved}: redirect to {children['loopback']}: 127.0.0.1 is a loopback")
        for problem in reading.problems
    ), reading.problems
    assert reading.pages == []
