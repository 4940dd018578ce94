"""Extraction: a selector set's fields taken from one page, typed, with what matched nothing.

Selectors run through parsel (Scrapy's selector library, on lxml): the same CSS, `::text`,
`::attr()` and XPath a Scrapy spider would write give the same matches here.
"""

import re
from typing import Any, NamedTuple

from ada_url import join_url
from parsel import Selector

from scrapeflow_dagster.engine.extract.selectors import Field, SelectorSet

# The first number in a text, thousands separators allowed: "$1,299.00" -> 1299.0.
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+]?\.\d+")
_INTEGER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)")
_TRUE = frozenset({"true", "yes", "1", "on", "y"})
_FALSE = frozenset({"false", "no", "0", "off", "n"})


class Extraction(NamedTuple):
    """What a set took from a page.

    `fields` holds every field of the set (None, or [] with `all`, when it matched nothing);
    `missing` the fields that matched nothing, in the set's order; `invalid` the fields whose
    matched text is not of the declared type (their value None), with the text.
    """

    fields: dict[str, Any]
    missing: list[str]
    invalid: dict[str, str]

    def as_output(self, selectors: str) -> dict[str, Any]:
        """The extraction as it is kept in an executor's output (and the `extracted` table)."""
        return {
            "selectors": selectors,
            "fields": self.fields,
            "missing": self.missing,
            "invalid": self.invalid,
        }


def extract(html: str, base_url: str, selector_set: SelectorSet) -> Extraction:
    """Run every field of `selector_set` on a page.

    Args:
        html: the page's decoded text.
        base_url: the document's base URL (`tasks.urls.document_base`), for `url` fields.
        selector_set: the fields.
    """
    page = Selector(text=html)
    fields: dict[str, Any] = {}
    missing: list[str] = []
    invalid: dict[str, str] = {}
    for field in selector_set.fields:
        texts = _matches(page, field)
        values = []
        for text in texts if field.all else texts[:1]:
            value = _typed(text, field.type, base_url)
            if value is None:
                invalid.setdefault(field.name, text[:200])
            else:
                values.append(value)
        if not texts:
            missing.append(field.name)
        fields[field.name] = values if field.all else (values[0] if values else None)
    return Extraction(fields, missing, invalid)


def _matches(page: Selector, field: Field) -> list[str]:
    """The field's matches as text, stripped, empty ones dropped (a match of blank text is no
    value a user wants: it counts as matching nothing)."""
    selected = page.css(field.css) if field.css is not None else page.xpath(field.xpath or "")
    texts = []
    for node in selected:
        root = node.root
        if isinstance(root, str):  # ::text, ::attr(), text() and @attr results
            text = root
        elif isinstance(root, (bool, float, int)):  # XPath count(), boolean()
            text = str(root)
        elif field.attr is not None:
            text = node.attrib.get(field.attr, "")
        else:
            text = " ".join((node.xpath("string()").get() or "").split())
        text = text.strip()
        if text:
            texts.append(text)
    return texts


def _typed(text: str, kind: str, base_url: str) -> Any:
    """`text` as a value of `kind`; None when it is not one."""
    if kind == "string":
        return text
    if kind == "url":
        try:
            return join_url(base_url, text)
        except ValueError:
            return None
    if kind == "boolean":
        lowered = text.lower()
        return True if lowered in _TRUE else False if lowered in _FALSE else None
    pattern = _INTEGER if kind == "integer" else _NUMBER
    found = pattern.search(text)
    if found is None:
        return None
    digits = found.group().replace(",", "")
    return int(digits) if kind == "integer" else float(digits)
