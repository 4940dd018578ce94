"""`main_content` on real pages of our own kinds (the second set, `pages/`) and on made-up
cases: what is kept, links resolved as a browser does, metadata, empty pages."""

import json
import re
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.content import MainContent, main_content

PAGES = Path(__file__).parent / "pages"
MARKED = json.loads((PAGES / "marked.json").read_text())


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _content(url: str) -> MainContent:
    return main_content((PAGES / MARKED[url]["file"]).read_text(errors="replace"), url)


def test_the_second_set_keeps_its_marked_main_text() -> None:
    found = wanted = 0
    missing: dict[str, list[str]] = {}
    for url, item in MARKED.items():
        text = _squeeze(_content(url).text)
        lost = [s for s in item["with"] if _squeeze(s) not in text]
        found += len(item["with"]) - len(lost)
        wanted += len(item["with"])
        if lost:
            missing[item["file"]] = lost
    assert found / wanted >= 0.98, missing


@pytest.mark.parametrize("kind", ["docs", "product", "listing"])
def test_pages_that_are_not_articles_keep_their_main_text(kind: str) -> None:
    for url, item in MARKED.items():
        if item["kind"] == kind:
            text = _squeeze(_content(url).text)
            assert [s for s in item["with"] if _squeeze(s) not in text] == [], item["file"]


def test_a_grid_of_cards_trafilatura_drops_is_kept_from_the_page() -> None:
    content = _content("https://shop.example.com/kitchen/kettles")
    assert content.extracted_by == "page"
    assert "Ember gooseneck pour-over kettle" in content.text
    assert "[Aurora electric kettle 1.7 l](https://shop.example.com/p/aurora)" in _squeeze(
        content.markdown
    ).replace("### ", "")
    assert "Garden and outdoor" not in content.text  # its menu is marked as chrome


def test_an_article_keeps_its_body_and_leaves_menus_footer_and_related_out() -> None:
    content = _content("https://courier.example.net/city/night-ferry-winter?utm_source=feed")
    assert content.extracted_by == "trafilatura"
    assert "shift workers at the hospital and the bakeries" in content.text
    for chrome in ["Business and markets", "Harbour fees rise", "We use cookies", "Advertise"]:
        assert chrome not in content.text


def test_article_metadata_is_read_from_the_page() -> None:
    content = _content("https://courier.example.net/city/night-ferry-winter?utm_source=feed")
    assert content.title == "Night ferry stays on through the winter"
    assert content.author == "Maren Holt"
    assert content.published == "2026-11-03"
    assert content.modified == "2026-11-04"
    assert content.language == "en"
    assert content.canonical_url == "https://courier.example.net/city/night-ferry-winter"
    assert content.description is not None and content.description.startswith("The city council")
    assert content.site_name == "The Riverside Courier"


def test_a_page_that_states_no_dates_gets_none_not_a_guess() -> None:
    # Its footer says "Copyright 2026": no publication date for all that.
    content = _content("https://docs.lanternfish.example/install.html")
    assert content.published is None
    assert content.modified is None


def test_markdown_keeps_headings_lists_tables_and_code() -> None:
    markdown = _content("https://docs.lanternfish.example/api/reader.html").markdown
    assert markdown.startswith("# lanternfish.reader")
    assert "## Parameters" in markdown
    assert "| path | str | The file to read, local or remote. |" in markdown
    assert "```\ndef open_reader(path: str, *, batch_rows: int = 4096) -> Reader:" in markdown
    install = _content("https://docs.lanternfish.example/install.html").markdown
    assert "1. Clone the repository and enter its folder." in install


def test_links_resolve_against_the_base_href_as_a_browser_does() -> None:
    # The page has `<base href="https://docs.lanternfish.example/v2/api/">`.
    content = _content("https://docs.lanternfish.example/api/reader.html")
    assert content.base_url == "https://docs.lanternfish.example/v2/api/"
    assert "[the writer](https://docs.lanternfish.example/v2/api/writer.html)" in content.markdown
    assert "[formats](https://docs.lanternfish.example/v2/formats/)" in content.markdown
    assert "the writer and formats" in content.text  # plain text keeps the words only


def test_links_without_a_base_keep_fragment_query_and_escapes() -> None:
    paragraph = "A paragraph long enough to be the content of this page, with links in it: "
    html = (
        "<html><body><article><h1>Links</h1>"
        f"<p>{paragraph}<a href='b.html#part'>a fragment</a>, "
        "<a href='../up/x%28y%29?b=2&amp;a=1&amp;a'>an escape</a>, "
        "<a href='//cdn.example.org/f'>no scheme</a>, <a href='mailto:a@example.org'>mail</a>."
        f"</p><p>{paragraph * 2}</p></article></body></html>"
    )
    markdown = main_content(html, "https://example.com/docs/a/page.html").markdown
    assert "[a fragment](https://example.com/docs/a/b.html#part)" in markdown
    assert "[an escape](https://example.com/docs/up/x%28y%29?b=2&a=1&a)" in markdown
    assert "[no scheme](https://cdn.example.org/f)" in markdown
    assert "[mail](mailto:a@example.org)" in markdown


def test_a_relative_base_href_resolves_against_the_page_url() -> None:
    html = (
        "<html><head><base href='/v3/'><link rel='canonical' href='guide'></head><body>"
        "<main><h1>Guide</h1><p>"
        + "Words of the guide that make a paragraph. " * 8
        + "<a href='next'>Next</a></p></main></body></html>"
    )
    content = main_content(html, "https://example.com/old/guide")
    assert content.base_url == "https://example.com/v3/"
    assert content.canonical_url == "https://example.com/v3/guide"
    assert "[Next](https://example.com/v3/next)" in content.markdown


@pytest.mark.parametrize(
    "html", ["", "   ", "<html></html>", "<html><body></body></html>", "<p></p>", "\x00"]
)
def test_a_page_without_content_gives_empty_text_without_error(html: str) -> None:
    content = main_content(html, "https://example.com/")
    assert (content.text, content.markdown, content.extracted_by) == ("", "", "none")


def test_the_bundled_sites_pages_keep_their_main_text() -> None:
    listing = _content("http://127.0.0.1:8765/products/list/0")
    assert "Deluxe chair 19" in listing.text and "$882.12" in listing.text
    product = _content("http://127.0.0.1:8765/products/5")
    assert "SKU-000005" in product.text
    assert product.title is not None and "Rustic notebook 5" in product.title


def test_the_declared_language_is_kept_as_written() -> None:
    assert _content("https://docs.lanternfish.example/de/cli.html").language == "de"
    assert _content("https://greywater.example.com/news/2026-press-release").language == "en-GB"
