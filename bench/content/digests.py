"""Which change digest tells a page's changes from its noise: the whole page's text (what `pages`
digests by default) or its main content (`change_digest: main_content`), on the bundled site's
changing pages as served (`/changing/{n}`: a date line and a view counter, which the
`change_ignore` patterns take out) and inside chrome that differs on every request
(`/changing/noisy/{n}`: a menu, a "Trending now" headline, a "Most read" box, a quote).

Each page is fetched for real (HTTP on loopback) every `every_hours` of site time over `days`;
two consecutive fetches of a page are a pair, which the site's truth (`/control/changing`: the
page's version) says changed or not. A digest that differs on a pair that did not change is a
false change; one that stays the same on a pair that changed, a missed change. Both digests
are computed from the same fetched page, as `pages` computes them (`executors.pages.
change_digest`): of the whole text, and of the main content (`main_content`).
"""

import json
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass

from scrapeflow_dagster.engine.content import main_content
from scrapeflow_dagster.engine.executors.pages import change_digest, decode_html, parse_page
from scrapeflow_dagster.engine.settings import RevisitSettings
from scrapeflow_dagster.site.server import SiteThread

VARIANTS = {"as served": "/changing/{n}", "in noisy chrome": "/changing/noisy/{n}"}
DIGESTS = ("whole text", "main content")


@dataclass
class DigestRow:
    """One digest on one variant of the pages: pairs of fetches and how it judged them."""

    variant: str
    digest: str
    pairs: int
    changes: int  # pairs the truth says changed
    false_changes: int
    missed_changes: int
    ms_per_page: float  # CPU of the digest, the parse or extraction it needs included


def _get(url: str, *, data: bytes | None = None) -> bytes:
    with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=30) as answer:
        return bytes(answer.read())


def _digests(html: bytes, url: str, cpu: dict[str, float]) -> dict[str, str]:
    started = time.process_time()
    page = parse_page(decode_html(html, content_type="text/html; charset=utf-8"), url)
    title = page.output["title"]
    whole = change_digest(page, title, None, RevisitSettings())
    parsed = time.process_time()
    content = main_content(page.text, url)
    main = change_digest(page, title, content, RevisitSettings(digest_basis="main_content"))
    cpu["whole text"] += parsed - started
    cpu["main content"] += time.process_time() - parsed
    return {"whole text": whole, "main content": main}


def measure_digests(*, pages: int = 40, days: float = 7.0, every_hours: float = 6.0) -> list[dict]:
    """Both digests on both variants of the changing pages (see the module).

    Args:
        pages: how many changing pages the site has (its rates cycle over them).
        days: site time the fetches span.
        every_hours: site time between two fetches of a page.

    Returns:
        One `DigestRow` (as a dict) per variant and digest.
    """
    counts: dict[tuple[str, str], Counter[str]] = {}
    cpu = dict.fromkeys(DIGESTS, 0.0)
    fetched = 0
    with SiteThread(changing_pages=pages) as site:
        last: dict[tuple[str, int], tuple[int, dict[str, str]]] = {}
        steps = int(days * 24 / every_hours) + 1
        for step in range(steps):
            t = step * every_hours * 3600
            _get(site.url(f"/control/changing/clock?t={t}"), data=b"")
            truth = json.loads(_get(site.url("/control/changing")))["pages"]
            for variant, path in VARIANTS.items():
                for n in range(pages):
                    url = site.url(path.format(n=n))
                    digests = _digests(_get(url), url, cpu)
                    fetched += 1
                    version = truth[str(n)]["version"]
                    before = last.get((variant, n))
                    last[(variant, n)] = (version, digests)
                    if before is None:
                        continue
                    changed = version != before[0]
                    for name in DIGESTS:
                        count = counts.setdefault((variant, name), Counter())
                        differs = digests[name] != before[1][name]
                        count["pairs"] += 1
                        count["changes"] += changed
                        count["false"] += differs and not changed
                        count["missed"] += changed and not differs
    return [
        DigestRow(
            variant=variant,
            digest=name,
            pairs=count["pairs"],
            changes=count["changes"],
            false_changes=count["false"],
            missed_changes=count["missed"],
            ms_per_page=1000 * cpu[name] / fetched,
        ).__dict__
        for (variant, name), count in counts.items()
    ]


def print_digests(rows: list[dict]) -> None:
    """The rows as a table."""
    print("\nchange digest on the changing pages (pairs of consecutive fetches)")
    print(
        f"{'pages':16} {'digest':13} {'pairs':>6} {'changes':>8} {'false':>6} {'missed':>7} "
        f"{'CPU ms/page':>12}"
    )
    for row in rows:
        print(
            f"{row['variant']:16} {row['digest']:13} {row['pairs']:6} {row['changes']:8} "
            f"{row['false_changes']:6} {row['missed_changes']:7} {row['ms_per_page']:12.2f}"
        )
