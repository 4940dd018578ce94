"""Links and images of a parsed page resolved against the document's base URL, as a browser
resolves them (WHATWG, through ada-url), before anything else reads the tree.

Why here and not after extraction: trafilatura resolves relative links itself, against the
page's origin alone (`/docs/a.html` + `b.html` gives `/b.html`) and without the `<base href>`;
an absolute URL it keeps as written. So every `href` and `src` is made absolute first, and the
`<base>` elements removed so no later reader resolves a second time.
"""

from ada_url import join_url
from lxml.html import HtmlElement

from scrapeflow_dagster.engine.tasks.urls import document_base

_ATTRIBUTES = (("a", "href"), ("area", "href"), ("img", "src"))


def resolve_in_place(document: HtmlElement, url: str) -> str:
    """Rewrite the `href` of links and the `src` of images in `document` to absolute URLs, as a
    browser resolves them (fragment, escapes and query kept; only what the URL Standard itself
    changes is changed), and drop its `<base>` elements.

    Args:
        document: the parsed page (changed in place).
        url: the URL the page was fetched from (after redirects).

    Returns:
        The document's base URL: its first `<base href>` resolved against `url`, else `url`.
    """
    bases = document.xpath("//base[@href]")
    base = document_base(url, bases[0].get("href") if bases else None)
    for element in document.xpath("//base"):
        element.drop_tree()
    resolved: dict[str, str] = {}  # menus and footers repeat the same hrefs
    for tag, attribute in _ATTRIBUTES:
        for element in document.iter(tag):
            value = element.get(attribute)
            if value is None:
                continue
            if value not in resolved:
                resolved[value] = _join(base, value)
            element.set(attribute, resolved[value])
    return base


def _join(base: str, value: str) -> str:
    try:
        return join_url(base, value.strip())
    except ValueError:  # what a browser cannot resolve is left as the page wrote it
        return value
