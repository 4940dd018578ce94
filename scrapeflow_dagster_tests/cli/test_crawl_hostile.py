"""A site cannot misuse the crawler, through the real `scrapeflow crawl` of the bundled site's
`/hostile/` pages: a redirect into a path robots.txt disallows, out of the crawl's scope or to
`file:` is refused before it is sent, a loop ends after the redirect limit, a chain is followed
to its page, bodies past the cap and gzip bombs stop at the cap, an endless path stops at the
depth; every refusal is a permanent failure that names the hop; the crawl's memory stays
bounded. (The address guard has its own test, with a public host in a network namespace.)"""

import json
import sys
import urllib.request
from pathlib import Path

import duckdb

from scrapeflow_dagster.engine.state.files import iter_statuses
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.adversary.hostile import CHAIN_HOPS, INDEX_PATH
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.cli.helpers import Run

# The crawl in a child of a small Python that prints the largest peak RSS of its children.
MEASURED = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:])
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, file=sys.stderr)
sys.exit(done.returncode)
"""


def requests_by_path(site: SiteThread) -> dict[str, int]:
    with urllib.request.urlopen(site.url("/control/requests"), timeout=10) as response:
        return json.load(response)["paths"]


def test_a_hostile_site_gets_nothing_robots_or_the_scope_forbid_and_every_refusal_is_named(
    run_command: Run, layout: DataLayout, tmp_path: Path
) -> None:
    with SiteThread(pages=10) as site:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(site.url(INDEX_PATH) + "\n")
        scrapeflow = str(Path(sys.executable).parent / "scrapeflow")
        done = run_command(
            "python",
            "-c",
            MEASURED,
            scrapeflow,
            "crawl",
            str(seeds),
            "--max-depth",
            "3",
            timeout_seconds=300,
        )
        asked = requests_by_path(site)

    assert done.returncode == 0, done.stdout + done.stderr
    peak_mib = int(done.stderr.strip().splitlines()[-1])
    # Never asked: the disallowed target, the offsite landing (under the other host name; the
    # chain's and the internal redirect's landings are the two on this host), /etc/passwd.
    assert "/graph/private/secret.html" not in asked
    assert asked["/hostile/landed"] == 2
    assert asked["/hostile/r/loop"] == 11  # the first request and 10 redirects, never retried
    chain = {f"/hostile/r/chain/{n}": 1 for n in range(CHAIN_HOPS + 1)}
    assert {path: asked.get(path) for path in chain} == chain
    assert {path: asked.get(path) for path in ("/hostile/huge", "/hostile/bomb")} == {
        "/hostile/huge": 1,
        "/hostile/bomb": 1,
    }
    deep = sorted(path for path in asked if path.startswith("/hostile/deep/"))
    assert deep == ["/hostile/deep/a", "/hostile/deep/a/a", "/hostile/deep/a/a/a"]
    assert peak_mib < 600, f"the crawl peaked at {peak_mib} MiB"
    print(f"peak RSS of the crawl's processes: {peak_mib} MiB")

    with duckdb.connect(str(layout.db_path), read_only=True) as db:
        failed = dict(
            db.execute(
                "SELECT t.url, s.error_kind || ' ' || s.error_class || ': ' || s.message "
                "FROM current_state s JOIN tasks t USING (key) "
                "WHERE s.executor = 'scrape' AND s.status = 'ERROR'"
            ).fetchall()
        )
        chained = db.execute(
            "SELECT final_url FROM pages WHERE url = ?",
            [site.url(f"/hostile/r/chain/{CHAIN_HOPS}")],
        ).fetchall()
    base = site.base_url
    host = base.split("//", 1)[1].split(":", 1)[0]
    assert failed == {
        site.url("/hostile/r/private"): (
            f"disallowed DisallowedError: redirect to {base}/graph/private/secret.html: "
            f"robots.txt of {base} disallows /graph/private/secret.html for our User-Agent"
        ),
        site.url("/hostile/r/offsite"): (
            "permanent RedirectRefusedError: redirect to "
            f"{base.replace('127.0.0.1', 'localhost')}/hostile/landed: out of the crawl's "
            f"scope (host {host})"
        ),
        site.url("/hostile/r/file"): (
            "permanent RedirectRefusedError: redirect to 'file:///etc/passwd': not an http(s) URL"
        ),
        site.url("/hostile/r/loop"): (
            "permanent TooManyRedirectsError: more than 10 redirects (the last to "
            f"{base}/hostile/r/loop)"
        ),
        site.url("/hostile/huge"): (
            f"permanent BodyTooLargeError: body of {300 * 1024 * 1024} bytes is over the cap of "
            f"{20 * 1024 * 1024} bytes"
        ),
        site.url("/hostile/bomb"): (
            f"permanent BodyTooLargeError: body is over the cap of {20 * 1024 * 1024} bytes "
            "(as decoded)"
        ),
    }
    # The stored record of a redirected page names both URLs.
    assert chained == [(site.url("/hostile/landed"),)]
    # No refusal is left for a retry: none is transient in its status file either.
    kinds = {}
    for _key, status in iter_statuses(layout.status_dir):
        if status["params"]["url"] in failed:
            kinds[status["params"]["url"]] = status.get("scrape_error_kind")
    assert kinds == {url: text.split(" ", 1)[0] for url, text in failed.items()}
