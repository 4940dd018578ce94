"""The page less its landmarks of chrome: what `main_content` keeps when trafilatura keeps too
little of a page (a grid of product cards, a list of links: trafilatura drops blocks dense in
links, which on those pages is the content itself).

Only what a page marks as chrome is taken out: scripts and styles, the landmarks `nav`,
`header`, `footer` and `aside` (and their ARIA roles), hidden elements, and elements whose class
or id is one of the names sites give their menus, sidebars, footers and banners.
"""

import re
from typing import Any

import html_text
from lxml.html import HtmlElement

_DROPPED_TAGS = ("script", "style", "noscript", "template", "nav", "header", "footer", "aside")
_CHROME_ROLES = ("navigation", "banner", "contentinfo", "complementary", "search")
# Whole class or id names: a `header` token marks a page header, `article-header` does not.
_CHROME_NAMES = re.compile(
    r"^(nav|navbar|navigation|menu|menubar|topbar|sidebar|sphinxsidebar|side-bar|footer|"
    r"site-footer|site-header|masthead|breadcrumbs?|related|share|social|newsletter)$"
    r"|cookie|consent|gdpr"
)


def _is_chrome(element: HtmlElement) -> bool:
    if element.tag in _DROPPED_TAGS:
        return True
    if element.get("role") in _CHROME_ROLES or element.get("hidden") is not None:
        return True
    if element.get("aria-hidden") == "true":
        return True
    names = (element.get("class") or "").split() + (element.get("id") or "").split()
    return any(_CHROME_NAMES.search(name.lower()) for name in names)


def pruned_body(document: HtmlElement) -> Any:
    """The document's `<body>` (the document when it has none) with its chrome dropped, changed
    in place."""
    body = document.find("body")
    body = body if body is not None else document
    # Descendants only: a body whose class names a state ("cookie-consent-open") is no banner.
    doomed = [e for e in body.iterdescendants() if isinstance(e.tag, str) and _is_chrome(e)]
    for element in doomed:
        if element.getparent() is not None:
            element.drop_tree()
    return body


def pruned_text(body: HtmlElement) -> str:
    """The text of a pruned body as a reader sees it (html-text: blocks on lines of their own)."""
    return str(html_text.extract_text(body))
