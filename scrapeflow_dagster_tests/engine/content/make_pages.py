"""Writes the second set of marked pages (`pages/`: the HTML and `marked.json`): pages of the
kinds this project scrapes that are not news articles (documentation, products, listings, the
bundled site's pages) and a few articles, all written for this project.

    .venv/bin/python -m scrapeflow_dagster_tests.engine.content.make_pages

`marked.json` maps each page's URL to its `file`, `kind`, the segments of its main content
(`with`), segments that are not main (`without`: menus, sidebars, footers, banners, related
links) and its whole main text (`main`). The bundled site's pages are served by the site and
marked by hand here (`SITE_PAGES`).
"""

import json
import re
import urllib.request
from pathlib import Path

from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.engine.content import page_kit as k
from scrapeflow_dagster_tests.engine.content.pages_written import WRITTEN_FIRST
from scrapeflow_dagster_tests.engine.content.pages_written_more import WRITTEN_MORE

PAGES_DIR = Path(__file__).parent / "pages"

# The bundled site's pages: path, kind, main segments, segments that are not main.
SITE_PAGES: list[tuple[str, str, list[str], list[str]]] = [
    (
        "/products/5",
        "product",
        [
            "Rustic notebook 5",
            "$513.01",
            "SKU-000005",
            "The Rustic notebook 5 does what a notebook does, and does it well.",
        ],
        ["Back to the list"],
    ),
    (
        "/products/6",
        "product",
        [
            "Smart chair 6",
            "SKU-000006",
            "The Smart chair 6 does what a chair does, and does it well.",
        ],
        ["Back to the list"],
    ),
    (
        "/products/list/0",
        "listing",
        [
            "Blue widget 0",
            "Sturdy notebook 1",
            "$2,256.58",
            "Compact chair 2",
            "Deluxe lamp 3",
            "Rustic notebook 5",
            "Smart chair 6",
            "Blue kettle 8",
            "Compact speaker 10",
            "Deluxe backpack 11",
            "Rustic drill 13",
            "Tiny backpack 15",
            "$1,537.05",
            "Sturdy widget 17",
            "Deluxe chair 19",
            "$882.12",
        ],
        [],
    ),
    (
        "/changing/2",
        "article",
        [
            "Changing page 2 (edition 0)",
            "The crimson garden lights on time.",
            "The rapid bridge shapes slowly.",
            "The hollow bridge lights for now.",
            "The amber engine carries today.",
            "The rapid engine shapes softly.",
            "The hollow lantern crosses again.",
            "$1,191.48",
        ],
        ["All changing pages"],
    ),
    (
        "/widget-captcha",
        "other",
        [
            "Contact us",
            "Write to us and we answer within two working days.",
            "please give your order number when you have one.",
        ],
        [],
    ),
    (
        "/graph/4",
        "listing",
        [
            "Graph 4",
            "./14#part",
            "../graph/1",
            "/graph/0#top",
            "/graph/private/4",
            "http://elsewhere.invalid/graph/4",
            "mailto:someone@example.com",
        ],
        [],
    ),
    # A page of generated words: its paragraph's start and end are marked (`_paragraph_ends`).
    ("/page/3", "article", ["Page 3"], []),
]


def _paragraph_ends(body: bytes) -> list[str]:
    """The first and last 60 characters of the page's first paragraph."""
    paragraph = re.search(rb"<p>([^<]+)</p>", body)
    if paragraph is None:
        return []
    text = paragraph.group(1).decode().strip()
    return [text[:60].rsplit(" ", 1)[0], text[-60:].split(" ", 1)[1]]


def _site_page(site: SiteThread, path: str) -> bytes:
    with urllib.request.urlopen(site.url(path)) as answer:
        return answer.read()


def _site_pages(marked: dict[str, dict[str, object]]) -> None:
    with SiteThread(pages=100, page_bytes=6000) as site:
        for path, kind, with_, without in SITE_PAGES:
            body = _site_page(site, path)
            if path.startswith("/page/"):
                with_ = [*with_, *_paragraph_ends(body)]
            name = "site-" + path.strip("/").replace("/", "-") + ".html"
            (PAGES_DIR / name).write_bytes(body)
            url = "http://127.0.0.1:8765" + path  # the demo's address, as `make demo` serves it
            marked[url] = {
                "file": name,
                "kind": kind,
                "with": with_,
                "without": without,
                "main": "\n".join(with_),
            }


def main() -> None:
    PAGES_DIR.mkdir(exist_ok=True)
    marked: dict[str, dict[str, object]] = {}
    for written in WRITTEN_FIRST + WRITTEN_MORE:
        document, main_text = k.page(
            written.title, written.blocks, written.chrome, style=written.style
        )
        (PAGES_DIR / written.file).write_text(document)
        marked[written.url] = {
            "file": written.file,
            "kind": written.kind,
            "with": k.marked_segments(written.blocks),
            "without": k.chrome_segments(written.chrome),
            "main": main_text,
        }
    _site_pages(marked)
    (PAGES_DIR / "marked.json").write_text(json.dumps(marked, indent=1, ensure_ascii=False))
    print(f"{len(marked)} pages in {PAGES_DIR}")


if __name__ == "__main__":
    main()
