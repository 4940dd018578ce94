"""What a page states of itself in its markup.

- Where trafilatura does not read it: its language (trafilatura only detects one when asked
  for a target language, with a model we do not ship), its canonical URL (trafilatura falls
  back to the `<base href>`, which is no canonical URL) and its modified date (trafilatura
  keeps one date: the publication's). Every value is as the page wrote it, stripped, or None
  when the page does not say.
- What trafilatura reads (`trafilatura_metadata`): title, author, publication date,
  description and site name, by its own functions, without the fields `main_content` does not
  keep (categories, tags, licence, host name): those took a third of its metadata time.

Read from the parsed page before any extraction changes it.
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


def _author(document: HtmlElement) -> str | None:
    """trafilatura's `extract_author`, which first copies the whole page to prune it: its
    XPaths test each element's own name and attributes only, so pruning never adds a match,
    and a page where none matches (most pages that are not articles) has no author to find."""
    from trafilatura import metadata as found
    from trafilatura.xpaths import AUTHOR_XPATHS

    if not any(xpath(document) for xpath in AUTHOR_XPATHS):
        return None
    author: str | None = found.extract_author(document)
    return author


def trafilatura_metadata(document: HtmlElement, url: str, date_params: dict[str, Any]) -> Any:
    """trafilatura's metadata of `document`, as its `extract_metadata` finds it (same steps, in
    the same order) for the fields `MainContent` keeps: `title`, `author`, `date`,
    `description`, `sitename` (and `url`, which the date search reads). Categories, tags,
    licence and host name are not looked for: on the development set they took 32% of
    `extract_metadata`'s time, and nothing keeps them.

    Args:
        document: the parsed page (trafilatura's loader); not changed.
        url: the URL it was fetched from.
        date_params: htmldate's parameters (`find_date`'s keyword arguments).

    Returns:
        A `trafilatura.settings.Document` with those fields set (None where not found).
    """
    # Imported here: the `content` extra is optional (`main_content._trafilatura` names it).
    from trafilatura import metadata as found

    described = found.examine_meta(document)
    if described.author and " " not in described.author:
        described.author = None  # as trafilatura: a one-word author is a user name, not a name
    try:
        described = found.extract_meta_json(document, described)
    except Exception:  # as trafilatura: its JSON-LD reader's bugs are not the page's fault
        pass
    described.title = described.title or found.extract_title(document)
    described.author = described.author or _author(document)
    described.url = described.url or found.extract_url(document, url)
    described.date = found.find_date(document, **{**date_params, "url": described.url})
    described.sitename = described.sitename or found.extract_sitename(document)
    if described.sitename:
        described.sitename = described.sitename.lstrip("@")  # a Twitter handle
        name = described.sitename
        if name and "." not in name and not name[0].isupper():
            described.sitename = described.sitename.title()
    elif described.url and (host := found.META_URL.match(described.url)):
        described.sitename = host[1]
    described.clean_and_trim()
    return described
