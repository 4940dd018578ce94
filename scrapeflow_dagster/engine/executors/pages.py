"""The `pages` executor: decode the stored HTML, then parse it into title, links and text size.

The charset is found the way browsers and Scrapy (w3lib) find it: a byte order mark, else the
`charset` of the response's Content-Type header, else a `<meta>` declaration near the top, else
detection (`charset-normalizer`). Labels are read as the WHATWG Encoding Standard reads them:
`iso-8859-1`, `latin1` and `ascii` mean windows-1252, a superset for printable text.
"""

import codecs
import hashlib
import re
from collections.abc import Mapping
from typing import NamedTuple

from charset_normalizer import from_bytes
from selectolax.lexbor import LexborHTMLParser as HTMLParser

from scrapeflow_dagster.engine.content import MainContent, main_content
from scrapeflow_dagster.engine.errors import RenderError
from scrapeflow_dagster.engine.executors.extraction import extraction_of
from scrapeflow_dagster.engine.executors.page_text import main_content_fields, page_text_fields
from scrapeflow_dagster.engine.executors.revisits import observe_page, page_digest
from scrapeflow_dagster.engine.executors.stored_body import page_url, read_body, read_rendered
from scrapeflow_dagster.engine.render.browser import browser_missing
from scrapeflow_dagster.engine.revisit.digest import main_content_digest
from scrapeflow_dagster.engine.run.context import (
    Context,
    ExecutorOutput,
    reads_stored_only,
    taskify,
)
from scrapeflow_dagster.engine.settings import RevisitSettings
from scrapeflow_dagster.engine.state.params import RENDER_OFF, render_mode
from scrapeflow_dagster.engine.state.schema import StatusData, fields_of, is_success
from scrapeflow_dagster.engine.tasks.urls import document_base, resolve_link

TEXT_START_CHARS = 200
# w3lib's window: HTML5 asks for 1024 bytes, but long heads put their meta later than that.
META_SCAN_BYTES = 4096
# Enough text to tell a charset apart; keeps detection cheap on large pages.
DETECT_BYTES = 64 * 1024

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_HEADER_CHARSET = re.compile(r"""charset\s*=\s*["']?\s*([^\s"';,]+)""", re.IGNORECASE)
# <meta charset="x"> and <meta http-equiv="Content-Type" content="text/html; charset=x">.
_META_CHARSET = re.compile(rb"""<meta\b[^>]*?\bcharset\s*=\s*["']?\s*([\w.:+-]+)""", re.IGNORECASE)
# WHATWG decodes these labels as windows-1252, and pages labelled so often hold its quotes.
_WHATWG_SUPERSETS = {"ascii": "cp1252", "iso8859-1": "cp1252"}
_FALLBACK_CODEC = "cp1252"
# What is parsed as a page; a body without a Content-Type is taken for HTML, as before.
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})


class DecodedPage(NamedTuple):
    """A page's text, the charset it was decoded with and where that charset came from."""

    text: str
    charset: str  # as the web names it: "windows-1251", "utf-8", "koi8-r"
    source: str  # "bom", "header", "meta", "detected" or "default"


def decode_html(body: bytes, *, content_type: str | None = None) -> DecodedPage:
    """Decode an HTML body with its declared charset, or a detected one when none is usable.

    Args:
        body: the page as fetched.
        content_type: the response's Content-Type header, if any.

    Returns:
        The text (undecodable bytes become U+FFFD), the charset and its source.
    """
    for bom, bom_codec in _BOMS:
        if body.startswith(bom):
            text = body[len(bom) :].decode(bom_codec, "replace")
            return DecodedPage(text, _web_name(bom_codec), "bom")
    header_match = _HEADER_CHARSET.search(content_type or "")
    codec = _codec(header_match.group(1) if header_match else None)
    source = "header"
    if codec is None:
        meta_match = _META_CHARSET.search(body[:META_SCAN_BYTES])
        codec = _codec(meta_match.group(1).decode("ascii") if meta_match else None)
        source = "meta"
    if codec is None:
        detected = _detect(body)
        codec, source = (detected, "detected") if detected else (_FALLBACK_CODEC, "default")
    return DecodedPage(body.decode(codec, "replace"), _web_name(codec), source)


def _codec(label: str | None) -> str | None:
    """Python's codec for a charset label; None for an unknown or non-text one, and for one that
    does not read ASCII as ASCII (HTML markup must, so such a declaration is wrong; UTF-16 is
    found by its byte order mark)."""
    if not label:
        return None
    try:
        name = codecs.lookup(label).name
        if b"<html>".decode(name) != "<html>":
            return None
    except (LookupError, UnicodeError):
        return None
    return _WHATWG_SUPERSETS.get(name, name)


def _detect(body: bytes) -> str | None:
    """The codec of an undeclared body: UTF-8 when it decodes as such, else windows-1252 when the
    detector finds it fits (as Scrapy and browsers default to it), else the detector's guess.

    Taking windows-1252 first matters: charset-normalizer alone reads short French, Italian or
    Portuguese text as cp1257 or cp1258 and garbles it. Cyrillic, Greek, CJK, Polish or Czech
    text does not fit windows-1252 and keeps the detector's answer; the price is undeclared
    Hungarian, Lithuanian or Estonian, whose letters also fit it and are then misread.
    """
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        return "utf-8"
    sample = body[:DETECT_BYTES]
    cut = sample.rfind(b"<")
    if len(body) > DETECT_BYTES and cut > 0:
        # A '<' never falls inside a multi-byte character of the ASCII-compatible encodings
        # (their trailing bytes are 0x40 or above), so the sample ends on a whole character.
        sample = sample[:cut]
    matches = from_bytes(sample)
    if any(match.encoding == "cp1252" for match in matches):
        return "cp1252"
    best = matches.best()
    return _codec(best.encoding) if best is not None else None


def _web_name(codec: str) -> str:
    """The name the web uses for one of Python's codecs: `cp1251` -> `windows-1251`."""
    if codec.startswith("cp125"):
        return "windows-" + codec.removeprefix("cp")
    return codec.replace("iso8859-", "iso-8859-")


def content_type_of(headers: Mapping[str, str] | None) -> str | None:
    """The Content-Type among response headers whose names may be in any case."""
    for name, value in (headers or {}).items():
        if name.lower() == "content-type":
            return value
    return None


def is_html(content_type: str | None) -> bool:
    """Whether a body of `content_type` (a Content-Type header, or None) is parsed as a page."""
    mime = (content_type or "").partition(";")[0].strip().lower()
    return not mime or mime in HTML_TYPES


def collapsed_start(text: str, chars: int) -> str:
    """`" ".join(text.split())[:chars]`, reading only as much of `text` as that needs.

    The collapsed form of any prefix of `text` is a prefix of the whole text's (a word the cut
    falls in comes out shortened, after the same single space), so once it holds `chars`
    characters they are the answer. Collapsing a 20 KB page's text took 149 us of its 235 us
    parse.
    """
    size = 2 * chars + 64
    while True:
        head = " ".join(text[:size].split())
        if len(head) >= chars or size >= len(text):
            return head[:chars]
        size *= 4


def parse_html(body: bytes, base_url: str, *, content_type: str | None = None) -> ExecutorOutput:
    """Title, every link (deduplicated, in page order), text size and start of a page.

    Links are the `href` of `<a>` and `<area>` elements (what Scrapy's link extractor takes),
    resolved as a browser resolves them (`tasks.urls.resolve_link`): against the document's
    `<base href>` when it has one, escapes and query kept as written, fragment dropped; only
    http(s) URLs are kept.

    Args:
        body: the page as fetched.
        base_url: the URL the page was fetched from (after redirects).
        content_type: the response's Content-Type header, for its charset.

    Returns:
        `title`, `link_count`, `links`, `text_bytes` (UTF-8 size of the body's text),
        `text_start` (its first `TEXT_START_CHARS` characters, spaces collapsed), `charset`
        and `charset_source` (see `DecodedPage`).
    """
    return parse_page(decode_html(body, content_type=content_type), base_url).output


class ParsedPage(NamedTuple):
    """`parse_html`'s output, with the decoded text, the document's base URL it used and the
    parsed tree."""

    output: ExecutorOutput
    text: str
    base: str
    tree: HTMLParser


def page_base(text: str, url: str) -> str:
    """The base URL of the decoded page `text` fetched from `url` (`<base href>` or `url`)."""
    base_node = HTMLParser(text).css_first("base[href]")
    return document_base(url, base_node.attributes.get("href") if base_node else None)


def parse_page(page: DecodedPage, base_url: str) -> ParsedPage:
    """`parse_html` on a page already decoded."""
    tree = HTMLParser(page.text)
    title_node = tree.css_first("title")
    base_node = tree.css_first("base[href]")
    base = document_base(base_url, base_node.attributes.get("href") if base_node else None)
    links: dict[str, None] = {}
    resolved: dict[str, str | None] = {}  # menus and footers repeat the same hrefs
    for node in tree.css("a[href], area[href]"):
        href = node.attributes.get("href") or ""
        if href not in resolved:
            # An empty href or a bare fragment is the page itself, not a link to follow.
            wanted = href.strip() and not href.strip().startswith("#")
            resolved[href] = resolve_link(base, href) if wanted else None
        link = resolved[href]
        if link is not None:
            links[link] = None
    text = tree.body.text(separator=" ") if tree.body is not None else ""
    output = {
        "title": title_node.text(strip=True) if title_node is not None else None,
        "link_count": len(links),
        "links": list(links),
        "text_bytes": len(text.encode()),
        "text_start": collapsed_start(text, TEXT_START_CHARS),
        "charset": page.charset,
        "charset_source": page.source,
    }
    return ParsedPage(output, page.text, base, tree)


def change_digest(
    page: ParsedPage, title: str | None, content: MainContent | None, revisit: RevisitSettings
) -> str:
    """The change digest of a parsed page: of its main content when `revisit.digest_basis`
    says so (`content`, which `page_main_content` then makes), else of its whole text (the
    page's tree is changed then: unseen elements removed)."""
    if revisit.digest_basis == "main_content" and content is not None:
        return main_content_digest(title, content.text, revisit.change_ignore)
    return page_digest(page.tree, title, revisit.change_ignore)


def _rendered(context: Context, key: str, status: StatusData) -> tuple[bytes, str, str] | None:
    """The rendered DOM of a task `render` rendered (its bytes, final URL and type), or None
    for a task not marked `render`, or one `render` left as fetched (not a page, or a `render:
    auto` task whose URL pattern needs no browser).

    Raises:
        RenderError: the task is marked `render: true` and no render of it is stored: naming
            the Chromium missing when there is none, else the `render` step.
    """
    try:
        mode = render_mode(status["params"])
    except ValueError as exc:
        raise RenderError(str(exc)) from None
    if mode == RENDER_OFF:
        return None
    output = status.get("render")
    if not is_success(status, "render") or not isinstance(output, dict):
        raise RenderError(
            browser_missing(context.settings.render)
            or f"the task is marked render: {status['params'].get('render')}, and no render step"
            " ran before pages (the shipped chain has one with SCRAPEFLOW_RENDER=1)"
        )
    if not output.get("rendered"):
        return None  # not a page (a download): its body is what there is
    final_url = page_url(status["params"], output.get("final_url"))
    return read_rendered(context, key), final_url, "text/html; charset=utf-8"


@reads_stored_only
@taskify
async def pages(context: Context, key: str, status: StatusData) -> ExecutorOutput:
    """Decode and parse the stored page: title, links, text size and the charset used (an
    HTML or XHTML body; any other type is kept as a fetched file, with its type and size),
    its readable text (and Markdown) up to the settings' cap (`page_text`), its main content
    with its metadata when `page_main_content` is set (`main_content`), and the fields of the
    task's selector set (`extracted`), when it names one."""
    scraped = status.get("scrape") or {}
    base_url = page_url(status["params"], scraped.get("final_url"))
    content_type = content_type_of(scraped.get("response_headers"))
    rendered = _rendered(context, key, status)
    revisit = context.settings.revisit
    tracked, digest = revisit.track, ""
    if rendered is not None:
        # The page as the browser left it: its DOM, at the URL it ended at.
        body, base_url, content_type = rendered
    else:
        body = read_body(context, key)
    if is_html(content_type):
        page = parse_page(decode_html(body, content_type=content_type), base_url)
        parsed = page.output
        # The task's selector set, on the text decoded once; a task without one has no key.
        extracted = extraction_of(context, status, page.text, page.base)
        if extracted is not None:
            parsed["extracted"] = extracted
        parsed.update(page_text_fields(page.text, context.settings))
        content = None
        if context.settings.page_main_content:
            # The DOM decoded once (a rendered page's as the browser left it), at its URL.
            content = main_content(page.text, base_url)
            parsed.update(main_content_fields(content, context.settings))
        if tracked:
            digest = change_digest(page, parsed["title"], content, revisit)
    else:
        # A download (a script, a PDF, JSON): a fetched file, not a page. It has no title or
        # links and no `pages` row; its type and size are kept (and its step row's size).
        parsed = {"file": True, "size": len(body), "links": []}
        if tracked:
            digest = hashlib.blake2b(body, digest_size=16).hexdigest()  # a file: by its bytes
    # What the `pages` table holds beside the parse, from the fetch it parsed.
    if rendered is not None:
        parsed["rendered"] = True
    output = {
        **parsed,
        "url": status["params"]["url"],
        "final_url": scraped.get("final_url"),
        # After a 304 the body is the one fetched earlier, with the status it had then.
        "http_status": scraped.get("body_http_status") or scraped.get("http_status"),
        "content_type": content_type,
        "fetched_at": status.get(fields_of("scrape").last_run),
    }
    if not tracked:
        return output
    output.update(
        observe_page(
            context,
            key,
            status,
            output,
            body=body,
            digest=digest,
            rendered=rendered is not None,
            decode=lambda previous: decode_html(previous, content_type=content_type).text,
            html=page.text if is_html(content_type) else None,
        )
    )
    return output
