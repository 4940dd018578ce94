"""A page's main content as text and Markdown, with its metadata (`main_content`).

The extractor is trafilatura (the `content` extra): on the development set of 163 real pages
it kept the most main text with the least chrome of the libraries measured, and it is the one
that also gives structure (headings, lists, tables, code) and metadata (docs/main-content.md
has the figures). Around it, this module does what it does not:

- links are resolved as a browser resolves them before it reads the page (`links`);
- language, canonical URL and modified date are read as the page states them (`metadata`);
- the page's `<h1>` is kept when trafilatura took it for the title alone (it leaves the first
  heading out when it is the title: the text would start with the body);
- a page trafilatura keeps too little of (a grid of product cards, a list of links) keeps
  instead its body less its chrome (`fallback`): the main text of listings must not be lost.
"""

import copy
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from lxml import etree
from lxml.html import HtmlElement

from scrapeflow_dagster.engine.content.fallback import pruned_body, pruned_text
from scrapeflow_dagster.engine.content.links import resolve_in_place
from scrapeflow_dagster.engine.content.metadata import (
    canonical_url,
    language,
    modified_date,
    trafilatura_metadata,
)

# What installs the extractor `main_content` needs (trafilatura; markdownify for the fallback).
CONTENT_EXTRA = "pip install 'scrapeflow-dagster[content]'"

# When trafilatura dropped content, not chrome (docs/main-content.md has the figures): its text
# is almost nothing of the page less its chrome, or it is under half of it and has none of the
# first texts after the page's `<h1>` (a listing's first items: the start of the main content).
FALLBACK_BELOW_SHARE = 0.05
START_MISSED_BELOW_SHARE = 0.5
PROSE_LINE_CHARS = 200
_START_TEXTS = 5  # texts after the `<h1>` looked for
_START_TEXT_CHARS = 15  # shorter ones (a date, "Share") say nothing of where content starts


@dataclass(frozen=True)
class MainContent:
    """A page's main content and metadata. Every field but `text`, `markdown`, `base_url` and
    `extracted_by` is None when the page does not say; dates are `YYYY-MM-DD`.

    Attributes:
        text: the main content as plain text, blocks on lines of their own ('' when none).
        markdown: the same as Markdown: headings, lists, tables, code blocks, emphasis, and
            links resolved against `base_url` as a browser resolves them.
        title: the page's title (its main heading, else its `<title>`).
        author: the author(s) the page names.
        published: the publication date.
        modified: the last-modified date, when the page states one in its markup.
        language: the language the page declares (`<html lang>`), not detected.
        canonical_url: `<link rel="canonical">` (else `og:url`), resolved, otherwise as written.
        description: the page's description (its meta description or `og:description`).
        site_name: the site's name (`og:site_name`, else as trafilatura infers it).
        base_url: the document's base URL links were resolved against (`<base href>` or URL).
        extracted_by: `trafilatura`, `page` (the body less its chrome: see the module) or
            `none` (no content).
    """

    text: str
    markdown: str
    title: str | None
    author: str | None
    published: str | None
    modified: str | None
    language: str | None
    canonical_url: str | None
    description: str | None
    site_name: str | None
    base_url: str
    extracted_by: str


def _empty(url: str) -> MainContent:
    return MainContent(
        text="",
        markdown="",
        title=None,
        author=None,
        published=None,
        modified=None,
        language=None,
        canonical_url=None,
        description=None,
        site_name=None,
        base_url=url,
        extracted_by="none",
    )


def _trafilatura() -> ModuleType:
    try:
        import trafilatura
    except ImportError:
        raise ImportError(f"main content needs trafilatura: {CONTENT_EXTRA}") from None
    return trafilatura


def _parse(trafilatura: ModuleType, html: str) -> HtmlElement | None:
    # trafilatura's own loader (comments and processing instructions dropped, a broken page
    # repaired): a tree lxml parses with its defaults makes it lose whole articles.
    from trafilatura.utils import load_html

    document = load_html(html) if html.strip() else None
    return document if isinstance(document, HtmlElement) else None


def _squeeze(text: str) -> str:
    # What `re.sub(r"\s+", " ", text).strip()` gives (both split on `str.isspace`), 8x faster.
    return " ".join(text.split())


def _start(document: HtmlElement) -> tuple[str, list[str]]:
    """The page's first `<h1>` and the first texts that follow it in document order."""
    heading = next((h for h in document.iter("h1") if _squeeze(h.text_content())), None)
    if heading is None:
        return "", []
    following: list[str] = []
    for element in heading.itersiblings():
        for node in element.iter():
            if node.tag in ("script", "style") or not isinstance(node.tag, str):
                continue
            if len(node.text or "") < _START_TEXT_CHARS:
                continue  # short before squeezing is short after: a menu's items are not squeezed
            text = _squeeze(node.text or "")
            if len(text) >= _START_TEXT_CHARS:
                following.append(text)
            if len(following) >= _START_TEXTS:
                return _squeeze(heading.text_content()), following
    return _squeeze(heading.text_content()), following


def _dropped_content(kept: str, text: str, whole_chars: int, h1: str, following: list[str]) -> bool:
    """Whether trafilatura's `text` (`kept` squeezed) lost the main content of a page whose
    text less its chrome, squeezed, is `whole_chars` long (see `FALLBACK_BELOW_SHARE`). Never
    true for a `whole_chars` when false for a larger one: an upper bound decides it when false.
    """
    share = len(kept) / max(1, whole_chars)
    if share < FALLBACK_BELOW_SHARE:
        return True
    started = h1 in kept or any(start in kept for start in following)
    # An article's body has paragraphs; what trafilatura keeps of a listing it lost does not.
    prose = max((len(line) for line in text.splitlines()), default=0) >= PROSE_LINE_CHARS
    return bool(following) and not started and not prose and share < START_MISSED_BELOW_SHARE


def _renderings(extracted: Any) -> tuple[str, str]:
    """Text and Markdown of trafilatura's result: its body is XML (`head`, `list`, `table`,
    `ref`...) and its `text` that body as Markdown already (formatting is on)."""
    from trafilatura.xml import xmltotxt

    # Its text rendering writes links and emphasis as Markdown too: plain text keeps the words.
    plain = copy.deepcopy(extracted.body)
    etree.strip_tags(plain, "ref", "hi")
    return xmltotxt(plain, False).strip(), (extracted.text or "").strip()


def _text_bound(document: HtmlElement) -> int:
    """A length the squeezed `pruned_text` of the document's body cannot exceed: what it keeps
    is a subset of the body's text nodes, each squeezed, and at most one space between two.
    Summing them is ~20x cheaper than pruning a copy of the page and reading it with html-text,
    which then only the pages that may need the fallback pay."""
    body = document.find("body")
    return sum(len(text) + 1 for text in (body if body is not None else document).itertext())


def _fallback_markdown(body: HtmlElement) -> str:
    try:
        from markdownify import markdownify
    except ImportError:
        raise ImportError(f"main content needs markdownify: {CONTENT_EXTRA}") from None
    markup = etree.tostring(body, encoding="unicode")
    return str(markdownify(markup, heading_style="ATX")).strip()


def _page_instead(
    document: HtmlElement, kept: str, text: str, h1: str, following: list[str]
) -> tuple[str, str] | None:
    """Text and Markdown of the page less its chrome (`fallback`) when trafilatura's `text`
    lost the page's main content (`_dropped_content`), else None."""
    body = pruned_body(copy.deepcopy(document))  # the page itself stays whole for the rest
    whole = pruned_text(body)
    if not _dropped_content(kept, text, len(_squeeze(whole)), h1, following):
        return None
    return whole.strip(), _fallback_markdown(body)


def _extract(trafilatura: ModuleType, document: HtmlElement) -> Any:
    return trafilatura.bare_extraction(
        document,
        # No URL: every link is absolute already (`links`), and given one trafilatura joins
        # each again with urllib (0.5 ms on a page of ten links), dropping an empty `?`.
        url=None,
        include_links=True,
        include_tables=True,
        include_formatting=True,
        include_images=False,
        include_comments=False,  # readers' comments are not what the page says
        with_metadata=False,  # `metadata.trafilatura_metadata`: only the fields kept
    )


# htmldate's parameters: its extensive search takes any date in the page (a copyright year)
# for the publication's: only dates the page states as such are kept.
def _date_params(url: str) -> dict[str, Any]:
    return {
        "extensive_search": False,
        "original_date": True,
        "outputformat": "%Y-%m-%d",
        "url": url,
    }


def main_content(html: str, url: str) -> MainContent:
    """The main content of the decoded page `html` fetched from `url`, as text and Markdown,
    with its metadata (see `MainContent`).

    Args:
        html: the page, decoded (`executors.pages.decode_html`) or as a renderer serialised it.
        url: the URL the page was fetched from, after redirects: links resolve against it (or
            the page's `<base href>`, resolved against it).

    Returns:
        The main content; a page without any gives empty text and Markdown, never an error.

    Raises:
        ImportError: naming the extra when trafilatura (or markdownify) is not installed.
    """
    trafilatura = _trafilatura()
    document = _parse(trafilatura, html)
    if document is None:
        return _empty(url)
    base = resolve_in_place(document, url)
    stated_language = language(document)
    stated_canonical = canonical_url(document, base)
    stated_modified = modified_date(document)
    h1, following = _start(document)
    # trafilatura reads a copy of the tree it is given, and its metadata functions do not
    # change it: `document` stays the page for the fallback and the `<title>`.
    extracted = _extract(trafilatura, document)
    described = (
        trafilatura_metadata(document, url, _date_params(url)) if extracted is not None else None
    )
    text, markdown = _renderings(extracted) if extracted is not None else ("", "")
    extracted_by = "trafilatura"
    kept = _squeeze(text)
    instead = None
    if _dropped_content(kept, text, _text_bound(document), h1, following):
        instead = _page_instead(document, kept, text, h1, following)
    if instead is not None:
        text, markdown, extracted_by = *instead, "page"
    elif h1 and h1 not in kept:
        text, markdown = f"{h1}\n{text}".strip(), f"# {h1}\n\n{markdown}".strip()
    if not text:
        extracted_by = "none"
    title = described.title if described is not None else None
    if not title:
        title = _squeeze(document.findtext(".//title") or "") or None
    return MainContent(
        text=text,
        markdown=markdown,
        title=title,
        author=described.author if described is not None else None,
        published=described.date if described is not None else None,
        modified=stated_modified,
        language=stated_language,
        canonical_url=stated_canonical,
        description=described.description if described is not None else None,
        site_name=described.sitename if described is not None else None,
        base_url=base,
        extracted_by=extracted_by,
    )
