"""Sitemaps open no door the address guard closes elsewhere, with a real public host: the bundled
site in a network namespace at a global address (port 8080), built with the sitemap doors into
an "internal" site on this machine's loopback (`internal_base`), and a second public site on the
same host (port 8081, `other_origin`). Through the real `scrapeflow crawl`:

- robots.txt's sitemaps (read for the seeds by default) and `--sitemap` of the doors' index:
  its robots.txt announces the internal site's sitemap, its index lists it and a child that
  redirects to it, its urlset lists internal pages in every spelling of 127.0.0.1 and a page
  that redirects inside. Nothing reaches the internal site under any name (its Host log), no
  file of the data folder holds an internal page, the public site's own listed pages are
  fetched, the other site's listed page is not (another origin, not cross-submitted), and the
  same crawl again asks the public robots.txt no more;
- cross-submitted (the other site's robots.txt announces the urlset), the other site's page is
  fetched;
- a user's own intranet task (a seed on the internal site) is still crawled.
"""

import functools
import json
import sys
import textwrap
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from scrapeflow_dagster.engine.history import connect_readonly
from scrapeflow_dagster.engine.state.files import load_status
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.schema import STATUS_SUFFIX, StatusData
from scrapeflow_dagster.site.adversary.doors import (
    INDEX_PATH,
    OTHER_ORIGIN_PAGE,
    OWN_PAGES,
    PAGES_PATH,
    spellings,
)
from scrapeflow_dagster.site.content.pages import Pages
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.cli.helpers import Run
from scrapeflow_dagster_tests.support.netns import PublicHost, public_host  # noqa: F401
from scrapeflow_dagster_tests.support.processes import wait_until

PUBLIC_PORT, OTHER_PORT = 8080, 8081
PAGES, PAGE_BYTES = 10, 2000
# The internal site's seed differs from the public sites' (0): its pages' filler text is its own.
INTERNAL_SEED = 7
INTRANET_PAGE = 9
SITE = textwrap.dedent(
    """
    import json
    import sys

    from scrapeflow_dagster.site.server import run_site_forever

    port, options = int(sys.argv[1]), json.loads(sys.argv[2])
    run_site_forever("0.0.0.0", port, on_ready=lambda url: print(url, flush=True), **options)
    """
)


@dataclass
class Sites:
    """The public site with the doors, the other public site, and the internal site."""

    public: str  # http://ADDRESS:8080
    other: str  # http://ADDRESS:8081
    internal: SiteThread

    @property
    def internal_port(self) -> int:
        return int(self.internal.base_url.rsplit(":", 1)[1])


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def host_log(base_url: str) -> dict[str, dict[str, int]]:
    """What the site at `base_url` saw: Host header -> path -> requests."""
    with urllib.request.urlopen(f"{base_url}/control/requests", timeout=10) as response:
        hosts: dict[str, dict[str, int]] = json.load(response)["hosts"]
    return hosts


def netloc(base_url: str) -> str:
    return base_url.removeprefix("http://")


@contextmanager
def hostile_sites(host: PublicHost, folder: Path, *, cross_submit: bool) -> Iterator[Sites]:
    """The internal site on loopback, then the public sites in the namespace, pointed at it;
    with `cross_submit`, the other site's robots.txt announces the public site's urlset."""
    public = f"http://{host.address}:{PUBLIC_PORT}"
    other = f"http://{host.address}:{OTHER_PORT}"
    with SiteThread(pages=PAGES, page_bytes=PAGE_BYTES, seed=INTERNAL_SEED) as internal:
        common: dict[str, Any] = {"pages": PAGES, "page_bytes": PAGE_BYTES}
        options = {
            PUBLIC_PORT: {**common, "internal_base": internal.base_url, "other_origin": other},
            OTHER_PORT: {**common, "cross_submit": [public + PAGES_PATH] if cross_submit else []},
        }
        for port, given in options.items():
            command = [sys.executable, "-c", SITE, str(port), json.dumps(given)]
            host.start(command, stdout=open(folder / f"site-{port}.log", "w"))
        for base in (public, other):
            wait_until(
                functools.partial(answers, f"{base}/health"),
                timeout_seconds=30,
                poll_seconds=0.2,
                what=f"the public site {base}",
            )
        yield Sites(public, other, internal)


def internal_marker() -> bytes:
    """A run of the internal site's filler text: in every internal page, in no public one."""
    body = Pages(count=PAGES, page_bytes=PAGE_BYTES, seed=INTERNAL_SEED).body(INTRANET_PAGE)
    marker = body.rsplit(b"<p>", 1)[1][:120]
    public = Pages(count=PAGES, page_bytes=PAGE_BYTES, seed=0)
    assert all(marker not in public.body(n) for n in range(PAGES))  # it tells them apart
    return marker


def files_holding(folder: Path, marker: bytes) -> list[str]:
    """The files under `folder` whose bytes hold `marker`."""
    return sorted(
        str(path.relative_to(folder))
        for path in folder.rglob("*")
        if path.is_file() and marker in path.read_bytes()
    )


def statuses_by_url(layout: DataLayout) -> dict[str, StatusData]:
    """Every task's status file, by the task's URL."""
    found: dict[str, StatusData] = {}
    for path in layout.status_dir.glob(f"*{STATUS_SUFFIX}"):
        status = load_status(layout.status_dir, path.name.removesuffix(STATUS_SUFFIX))
        if status is not None:
            found[status["params"]["url"]] = status
    return found


def scrape_status(statuses: dict[str, StatusData], url: str) -> str | None:
    status = statuses.get(url)
    return None if status is None else status.get("scrape_status")


def frontier_outcomes(layout: DataLayout) -> dict[str, str]:
    """What the `frontier` table says became of each URL a sitemap gave (DuckDB, read only)."""
    with connect_readonly(layout.db_path) as conn:
        rows = conn.execute("SELECT url, outcome FROM frontier").fetchall()
    return {str(url): str(outcome) for url, outcome in rows}


def robots_asked(sites: Sites) -> int:
    """How many times the public site's robots.txt was asked for."""
    return host_log(sites.public).get(netloc(sites.public), {}).get("/robots.txt", 0)


def crawl_intranet(run_command: Run, folder: Path, sites: Sites) -> tuple[int, str]:
    """`scrapeflow crawl` of the user's own intranet seed; its exit code and output."""
    seeds = folder / "intranet.txt"
    seeds.write_text(f"http://127.0.0.1:{sites.internal_port}/page/{INTRANET_PAGE}\n")
    done = run_command("scrapeflow", "crawl", str(seeds), "--max-depth", "0", timeout_seconds=300)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize("reader", ["robots-sitemaps", "sitemap-option"])
def test_public_sitemaps_lead_nowhere_internal_and_intranet_seeds_still_crawl(
    reader: str,
    public_host: PublicHost,  # noqa: F811
    run_command: Run,
    layout: DataLayout,
    tmp_path: Path,
) -> None:
    marker = internal_marker()
    with hostile_sites(public_host, tmp_path, cross_submit=False) as sites:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(f"{sites.public}/page/0\n")
        if reader == "robots-sitemaps":  # the seed's robots.txt announces the sitemaps
            args = [str(seeds), "--max-depth", "1"]
        else:
            args = ["--sitemap", sites.public + INDEX_PATH, "--max-depth", "0"]

        first = run_command("scrapeflow", "crawl", *args, timeout_seconds=300)
        robots_before = robots_asked(sites)
        again = run_command("scrapeflow", "crawl", *args, timeout_seconds=300)
        robots_after = robots_asked(sites)
        reached = host_log(sites.internal.base_url)
        other_saw = host_log(sites.other).get(netloc(sites.other), {})
        holding = files_holding(layout.root, marker)
        statuses = statuses_by_url(layout)
        outcomes = frontier_outcomes(layout)

        intranet_code, intranet_output = crawl_intranet(run_command, tmp_path, sites)
        reached_by_intranet = host_log(sites.internal.base_url)
        intranet_status = scrape_status(
            statuses_by_url(layout),
            f"http://127.0.0.1:{sites.internal_port}/page/{INTRANET_PAGE}",
        )

    output = first.stdout + first.stderr
    # Nothing reached the internal site, under any of its names.
    names = [f"{host}:{sites.internal_port}" for host in spellings("127.0.0.1")]
    assert reached == {}, f"reached under {sorted(reached)} (of {names}): {reached}\n{output}"
    assert holding == [], f"internal pages stored in {holding}"
    # The public site's own listed pages were fetched.
    own = [f"{sites.public}/doors/page/{n}" for n in OWN_PAGES]
    assert {url: scrape_status(statuses, url) for url in own} == dict.fromkeys(own, "SUCCESS")
    # The other site's listed page is another origin's, not cross-submitted: never fetched.
    assert f"/page/{OTHER_ORIGIN_PAGE}" not in other_saw, other_saw
    assert first.returncode == 0, output
    # Each entry's fate is a frontier row: every internal spelling refused, the other origin's
    # page skipped, the own pages added; the page that redirects inside became a task whose
    # redirect was refused.
    internal_entries = [f"http://{name}/page/{n}" for n, name in enumerate(names, 1)]
    assert {url: outcomes.get(url) for url in internal_entries} == dict.fromkeys(
        internal_entries, "refused_address"
    ), outcomes
    assert outcomes[f"{sites.other}/page/{OTHER_ORIGIN_PAGE}"] == "other_host", outcomes
    assert {outcomes.get(url) for url in own} == {"added"}, outcomes
    redirected = next(url for url in statuses if "/hostile/r/to" in url)
    # Refused by the crawl's scope first (a crawl task), by the guard otherwise.
    refusal = str(scrape_status(statuses, redirected))
    assert refusal.startswith(("ERROR RedirectRefusedError::", "ERROR AddressRefusedError::"))
    assert f"redirect to http://127.0.0.1:{sites.internal_port}/" in refusal, refusal
    assert "refused_address" in output and "other_host" in output, output
    # The same crawl again: robots.txt is not asked again.
    assert again.returncode == 0, again.stdout + again.stderr
    assert robots_after == robots_before, (robots_before, robots_after)

    # The user's own intranet seed is crawled (its page fetched, from the internal address).
    assert intranet_code == 0, intranet_output
    assert intranet_status == "SUCCESS", intranet_output
    assert (
        reached_by_intranet[f"127.0.0.1:{sites.internal_port}"].get(f"/page/{INTRANET_PAGE}") == 1
    ), reached_by_intranet
    assert set(reached_by_intranet) == {f"127.0.0.1:{sites.internal_port}"}


def test_a_cross_submitted_page_of_another_public_site_is_crawled(
    public_host: PublicHost,  # noqa: F811
    run_command: Run,
    layout: DataLayout,
    tmp_path: Path,
) -> None:
    with hostile_sites(public_host, tmp_path, cross_submit=True) as sites:
        done = run_command(
            "scrapeflow",
            "crawl",
            "--sitemap",
            sites.public + INDEX_PATH,
            "--max-depth",
            "0",
            timeout_seconds=300,
        )
        reached = host_log(sites.internal.base_url)
        other_saw = host_log(sites.other).get(netloc(sites.other), {})
        statuses = statuses_by_url(layout)

    output = done.stdout + done.stderr
    assert reached == {}, f"reached under {sorted(reached)}: {reached}\n{output}"
    # The other site's robots.txt announces the urlset that lists its page: it is crawled.
    other_page = f"{sites.other}/page/{OTHER_ORIGIN_PAGE}"
    assert other_saw.get(f"/page/{OTHER_ORIGIN_PAGE}") == 1, other_saw
    assert scrape_status(statuses, other_page) == "SUCCESS", output
    assert done.returncode == 0, output
