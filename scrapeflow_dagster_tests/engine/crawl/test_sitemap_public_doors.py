"""The sitemap reader's doors that need a real public host (`support.netns`: a network namespace
at a global address; skipped without root or `ip netns`, a failure under
`SCRAPEFLOW_REQUIRE_SERVICES=1`):

- an intranet seed whose robots.txt redirects to a public host: that host's `Sitemap:` lines
  are public (robots.txt's final answer decides, hop by hop), so the internal sitemap it
  announces is refused, never fetched on the intranet route; a robots.txt the intranet site
  answers itself still announces intranet sitemaps;
- one sitemap naming many hosts: the reading looks up (DNS) no more of them than
  `max_other_origins_per_reading`, in a namespace whose DNS server is the reading's own child
  process, which counts the names asked.
"""

import contextlib
import functools
import json
import shutil
import subprocess
import sys
import textwrap
import urllib.request
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from scrapeflow_dagster.engine.crawl.scope import OVER_BUDGET
from scrapeflow_dagster.engine.crawl.sitemaps.reading import (
    OTHER_HOST,
    REFUSED_ADDRESS,
    SitemapReading,
    read_sitemaps,
)
from scrapeflow_dagster.engine.gate.opening import open_gate
from scrapeflow_dagster.site.adversary.doors import INDEX_PATH
from scrapeflow_dagster_tests.conftest import fast_settings
from scrapeflow_dagster_tests.engine.gate.sites import Site, redirect, text, urlset
from scrapeflow_dagster_tests.support.netns import PublicHost, public_host  # noqa: F401
from scrapeflow_dagster_tests.support.paths import REPO_ROOT
from scrapeflow_dagster_tests.support.processes import wait_until

PUBLIC_PORT = 8080
# The bundled site with the sitemap doors, in the namespace, pointed at the intranet site.
SITE = textwrap.dedent(
    """
    import sys

    from scrapeflow_dagster.site.server import run_site_forever

    port, internal = int(sys.argv[1]), sys.argv[2]
    run_site_forever("0.0.0.0", port, pages=5, internal_base=internal)
    """
)
LOOKUPS_CHILD = "scrapeflow_dagster_tests.engine.crawl.lookups_child"
NETNS_ETC = Path("/etc/netns")


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@pytest.fixture
async def intranet() -> AsyncIterator[Site]:
    """An intranet site on this machine's loopback."""
    site = Site("127.0.0.1")
    await site.start()
    yield site
    await site.stop()


async def read_for_seed(folder: Path, seed: str) -> SitemapReading:
    """The sitemaps robots.txt of `seed` (a user's own task: its URL decides) announces."""
    async with open_gate(folder, fast_settings()) as context:
        return await read_sitemaps(context, [], robots_of=[{"url": seed}])


async def test_an_intranet_seeds_robots_txt_sent_to_a_public_host_announces_public_sitemaps(
    public_host: PublicHost,  # noqa: F811
    intranet: Site,
    tmp_path: Path,
) -> None:
    public = f"http://{public_host.address}:{PUBLIC_PORT}"
    command = [sys.executable, "-c", SITE, str(PUBLIC_PORT), intranet.base]
    public_host.start(command, stdout=open(tmp_path / "site.log", "w"))
    wait_until(
        functools.partial(answers, f"{public}/health"),
        timeout_seconds=30,
        poll_seconds=0.2,
        what=f"the public site {public}",
    )
    host = f"127.0.0.1:{intranet.port}"
    # The public site's robots.txt announces `{intranet}/sitemap.xml` and its doors' index.
    intranet.routes["/robots.txt"] = redirect(f"{public}/robots.txt")
    intranet.routes["/sitemap.xml"] = urlset(f"{intranet.base}/secret")
    intranet.routes["/page"] = text("intranet page")

    reading = await read_for_seed(tmp_path / "redirected", f"{intranet.base}/page")

    # Only the seed's robots.txt was asked inside: the sitemap it led to is public's.
    assert intranet.seen == Counter({(host, "/robots.txt"): 1}), reading
    refused = [s.url for s in reading.skipped if s.outcome == REFUSED_ADDRESS]
    assert f"{intranet.base}/sitemap.xml" in refused, reading.skipped
    assert f"{public}{INDEX_PATH}" in reading.files, reading
    assert reading.pages, reading
    assert {page.trust for page in reading.pages} == {"public"}
    assert {urlsplit(page.url).hostname for page in reading.pages} == {public_host.address}

    # The control: robots.txt answered inside announces an intranet sitemap, read as one.
    intranet.routes["/robots.txt"] = text(f"Sitemap: {intranet.base}/sitemap.xml\n")
    inside = await read_for_seed(tmp_path / "inside", f"{intranet.base}/page")
    assert [(page.url, page.trust) for page in inside.pages] == [
        (f"{intranet.base}/secret", "intranet")
    ]


@contextlib.contextmanager
def namespace_resolver(namespace: str, text: str) -> Iterator[None]:
    """`/etc/netns/<namespace>/resolv.conf` holding `text`, for processes started in
    `namespace` from now on (`ip netns exec` mounts it over `/etc/resolv.conf`)."""
    folder = NETNS_ETC / namespace
    folder.mkdir(parents=True)  # fails if it exists: another test's, never overwritten
    try:
        (folder / "resolv.conf").write_text(text)
        yield
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        with contextlib.suppress(OSError):  # left as it was unless another test's is in it
            NETNS_ETC.rmdir()


@pytest.mark.timeout(120)
def test_a_sitemap_naming_many_hosts_looks_up_no_more_than_the_budget(
    public_host: PublicHost,  # noqa: F811
) -> None:
    names, cap = 40, 3
    with namespace_resolver(public_host.name, "nameserver 127.0.0.1\noptions attempts:1\n"):
        child = public_host.start(
            [sys.executable, "-m", LOOKUPS_CHILD, public_host.address, str(names), str(cap)],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
        )
        out, _ = child.communicate(timeout=90)
    assert child.returncode == 0, out
    found = json.loads(out.strip().splitlines()[-1])

    # Only the names of the origins within the budget were asked, in the order listed.
    assert found["names"] == [f"h{i}.lookups.test" for i in range(cap)], found["names"]
    assert found["skipped"] == {OTHER_HOST: cap, OVER_BUDGET: names - cap}
    assert found["pages"] == [found["own"]]
