"""A parsed page's readable text, and its Markdown, as `pages` keeps them when asked (settings
`page_text_max_chars`, `page_markdown`: off by default, as they cost per page).

The text is what a reader sees of the page's body: scripts, styles and hidden markup left out,
blocks on lines of their own (html-text, Zyte's extractor, on lxml). The Markdown (headings,
lists, links, emphasis; markdownify) is for the many users who feed pages to search or language
models; it costs ~5 ms for a 20 KB page and needs the `markdown` extra, so it is a setting. Both
are cut at a setting's number of characters, and the full length is kept beside them.

The page's main content (`page_main_content`, `engine.content`: trafilatura, the `content`
extra) is kept the same way, under one key with its metadata: the text of a page less its
menus, footers and banners, which is what search and language models want of it.
"""

from typing import Any

import html_text
import lxml.html
from lxml import etree

from scrapeflow_dagster.engine.content import MainContent
from scrapeflow_dagster.engine.settings import (
    MAIN_CONTENT_MAX_CHARS,
    MARKDOWN_EXTRA,
    ScrapeSettings,
)

# The page's metadata `main_content_fields` keeps beside the main text, as `MainContent` names
# them (dates `YYYY-MM-DD`; None where the page does not say).
MAIN_CONTENT_METADATA = (
    "title",
    "author",
    "published",
    "modified",
    "language",
    "canonical_url",
    "description",
    "site_name",
    "extracted_by",
)


def _body(html: str) -> Any:
    """The page's `<body>` (the whole document when it has none), parsed by lxml."""
    try:
        document = lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError):  # an empty or markup-free page
        return None
    body = document.find("body")
    return body if body is not None else document


def readable_text(html: str) -> str:
    """The body's text as a reader sees it (see the module); '' for a page without any."""
    body = _body(html)
    return html_text.extract_text(body) if body is not None else ""


def markdown_of(html: str) -> str:
    """The body as Markdown (links and images as written in the page).

    Raises:
        ImportError: naming the extra when markdownify is not installed.
    """
    try:
        from markdownify import markdownify
    except ImportError:
        raise ImportError(f"page_markdown needs markdownify: {MARKDOWN_EXTRA}") from None
    body = _body(html)
    if body is None:
        return ""
    return markdownify(etree.tostring(body, encoding="unicode"), heading_style="ATX").strip()


def page_text_fields(html: str, settings: ScrapeSettings) -> dict[str, Any]:
    """The text fields `pages` adds to its output: `text`, `text_chars` (before the cut) and
    `text_truncated`, and the same for `markdown` when `page_markdown` is set; none when
    `page_text_max_chars` is 0."""
    cap = settings.page_text_max_chars
    if cap <= 0:
        return {}
    fields: dict[str, Any] = {}
    kinds = [("text", readable_text)]
    if settings.page_markdown:
        kinds.append(("markdown", markdown_of))
    for name, make in kinds:
        value = make(html)
        fields[name] = value[:cap]
        fields[f"{name}_chars"] = len(value)
        fields[f"{name}_truncated"] = len(value) > cap
    return fields


def main_content_fields(content: MainContent, settings: ScrapeSettings) -> dict[str, Any]:
    """The `main_content` field `pages` adds to its output when `page_main_content` is set:
    the main text and Markdown of `content` (cut at `page_text_max_chars`, else
    `MAIN_CONTENT_MAX_CHARS`, with `*_chars` before the cut and `*_truncated`) and
    `MAIN_CONTENT_METADATA`.

    Args:
        content: the page's main content (`engine.content.main_content` of the decoded page;
            for a rendered page, of the DOM the browser left, at the URL it ended at).
        settings: the run's settings.
    """
    cap = settings.page_text_max_chars or MAIN_CONTENT_MAX_CHARS
    fields: dict[str, Any] = {}
    for name, value in (("text", content.text), ("markdown", content.markdown)):
        fields[name] = value[:cap]
        fields[f"{name}_chars"] = len(value)
        fields[f"{name}_truncated"] = len(value) > cap
    fields.update((name, getattr(content, name)) for name in MAIN_CONTENT_METADATA)
    return {"main_content": fields}
