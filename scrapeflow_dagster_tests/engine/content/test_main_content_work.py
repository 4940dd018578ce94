"""What `main_content` leaves to trafilatura and what it does itself, to spend less per page:
trafilatura's metadata for the fields kept only, its links not joined a second time."""

import json
from pathlib import Path

from trafilatura.metadata import extract_metadata
from trafilatura.utils import load_html

from scrapeflow_dagster.engine.content import main_content
from scrapeflow_dagster.engine.content.main_content import _date_params
from scrapeflow_dagster.engine.content.metadata import trafilatura_metadata

PAGES = Path(__file__).parent / "pages"
MARKED = json.loads((PAGES / "marked.json").read_text())
KEPT = ("title", "author", "date", "description", "sitename")


def test_the_metadata_kept_is_what_trafilatura_finds_for_it() -> None:
    compared = 0
    for url, item in MARKED.items():
        html = (PAGES / item["file"]).read_text(errors="replace")
        whole = extract_metadata(load_html(html), url, _date_params(url))
        kept = trafilatura_metadata(load_html(html), url, _date_params(url))
        assert {f: getattr(kept, f) for f in KEPT} == {f: getattr(whole, f) for f in KEPT}, url
        compared += sum(getattr(whole, f) is not None for f in KEPT)
    assert compared > 2 * len(MARKED)  # pages that state such things, not only Nones


def test_an_empty_query_or_fragment_stays_as_written() -> None:
    paragraph = "A paragraph long enough to be the content of this page, with links in it: "
    html = (
        "<html><body><article><h1>Links</h1>"
        f"<p>{paragraph}<a href='?'>an empty query</a>, <a href='#'>an empty fragment</a>, "
        f"<a href='/x/.././y'>dot segments</a>.</p><p>{paragraph * 2}</p></article></body></html>"
    )
    markdown = main_content(html, "https://example.com/docs/page.html").markdown
    # As a browser resolves them (trafilatura's own second join with urllib drops both).
    assert "[an empty query](https://example.com/docs/page.html?)" in markdown
    assert "[an empty fragment](https://example.com/docs/page.html#)" in markdown
    assert "[dot segments](https://example.com/y)" in markdown
