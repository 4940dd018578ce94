"""What a page states of itself in its markup, where trafilatura does not read it: its language
(trafilatura only detects one when asked for a target language, with a model we do not ship),
its canonical URL (trafilatura falls back to the `<base href>`, which is no canonical URL) and
its modified date (trafilatura keeps one date: the publication's).

Read from the parsed page before any extraction changes it; every value is as the page wrote
it, stripped, or None when the page does not say.
"""

import json
import re
from typing import Any

from ada_url import join_url
from lxml.html import HtmlElement

# `2026-11-04`, alone or at the start of a timestamp (`2026-11-04T17:40:00+01:00`).
_ISO_DATE = re.compile(r"^\s*(\d{4}-\d{2}-\d{2})")
_MODIFIED_META = (
    "article:modified_time",
    "og:updated_time",
    "last-modified",
    "dcterms.modified",
    "datemodified",
)


def _first(document: HtmlElement, xpath: str) -> str | None:
    for value in document.xpath(xpath):
        if str(value).strip():
            return str(value).strip()
    return None


def language(document: HtmlElement) -> str | None:
    """The language the page declares: `<html lang>`, else a Content-Language meta, else
    `og:locale` (`en_GB` written `en-GB`)."""
    declared = _first(document, "/html/@lang") or _first(
        document,
        "//meta[translate(@http-equiv,'CONTENTLANGUAGE','contentlanguage')"
        "='content-language']/@content",
    )
    if declared:
        return declared
    locale = _first(document, "//meta[@property='og:locale']/@content")
    return locale.replace("_", "-") if locale else None


def canonical_url(document: HtmlElement, base: str) -> str | None:
    """The page's `<link rel="canonical">` (else its `og:url`), resolved against the
    document's base URL `base` as a browser resolves it; never changed otherwise."""
    href = _first(
        document, "//link[contains(concat(' ', normalize-space(@rel), ' '), ' canonical ')]/@href"
    ) or _first(document, "//meta[@property='og:url']/@content")
    if href is None:
        return None
    try:
        return join_url(base, href)
    except ValueError:
        return None


def _json_ld_dates(document: HtmlElement, key: str) -> str | None:
    for script in document.xpath("//script[@type='application/ld+json']/text()"):
        try:
            data: Any = json.loads(script)
        except ValueError:  # a page's broken JSON-LD is its own business
            continue
        stack = [data]
        while stack:
            node = stack.pop()
            if isinstance(node, list):
                stack.extend(node)
            elif isinstance(node, dict):
                if isinstance(node.get(key), str):
                    return str(node[key])
                stack.extend(v for v in node.values() if isinstance(v, dict | list))
    return None


def modified_date(document: HtmlElement) -> str | None:
    """The date the page says it was last modified (`YYYY-MM-DD`): a modified-time meta, an
    `itemprop="dateModified"`, or JSON-LD's `dateModified`; None when it does not say."""
    for name in _MODIFIED_META:
        stated = _first(
            document,
            f"//meta[translate(@property,'ABCDEFGHIJKLMNOPQRSTUVWXYZ','abcdefghijklmnopqrstuvwxyz')"
            f"='{name}' or translate(@name,'ABCDEFGHIJKLMNOPQRSTUVWXYZ',"
            f"'abcdefghijklmnopqrstuvwxyz')='{name}']/@content",
        )
        if stated:
            break
    else:
        stated = _first(
            document,
            "//*[@itemprop='dateModified']/@content | //*[@itemprop='dateModified']/@datetime",
        ) or _json_ld_dates(document, "dateModified")
    found = _ISO_DATE.match(stated) if stated else None
    return found.group(1) if found else None
