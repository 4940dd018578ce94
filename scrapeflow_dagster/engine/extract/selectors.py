"""Selector sets: the named fields an extraction takes from a page, read from a YAML or JSON file.

A set is a file `<name>.yaml` (or `.yml`, `.json`; YAML reads JSON too)::

    urls: "/products/\\d+$"        # optional regex: pages whose URL does not match are skipped
    fields:
      name: "h1::text"             # shorthand: a CSS selector, its first match, as text
      price: {css: ".price", type: number, required: true}
      sku: {xpath: "//*[@itemprop='sku']/text()"}
      tags: {css: ".tags li", all: true}
      image: {css: "img.main", attr: src, type: url}

A field has exactly one of `css` (with parsel's `::text` and `::attr(name)`) or `xpath`; `all`
takes every match as a list (default: the first); `attr` takes an attribute of the matched
elements (default: their text, spaces collapsed); `type` is `string` (default), `integer`,
`number`, `boolean` or `url` (resolved against the page's base URL as a browser resolves a
link); `required` fails the task when the field matches nothing. Every expression is compiled
when the file is read, so a typo is an error naming the file and field, not an empty column.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from cssselect import SelectorError
from lxml import etree
from parsel import Selector

from scrapeflow_dagster.engine.state.params import set_name_error

SUFFIXES = (".yaml", ".yml", ".json")
TYPES = ("string", "integer", "number", "boolean", "url")
# What a DuckDB column of each declared type is (for typed exports).
DUCKDB_TYPES = {
    "string": "VARCHAR",
    "integer": "BIGINT",
    "number": "DOUBLE",
    "boolean": "BOOLEAN",
    "url": "VARCHAR",
}
_FIELD_KEYS = frozenset({"css", "xpath", "all", "attr", "type", "required"})
_SET_KEYS = frozenset({"urls", "fields"})
# Field names become DuckDB columns beside these.
RESERVED_FIELDS = frozenset(
    {"key", "executor", "selectors", "url", "missing", "invalid", "ended_at", "run_id"}
)


class SelectorSetError(ValueError):
    """A selector set that cannot be used; the message names the file and the field."""


@dataclass(frozen=True, slots=True)
class Field:
    """One named field of a set."""

    name: str
    css: str | None = None
    xpath: str | None = None
    all: bool = False
    attr: str | None = None
    type: str = "string"
    required: bool = False

    @property
    def expression(self) -> str:
        """The CSS or XPath expression, for messages."""
        return self.css if self.css is not None else f"xpath:{self.xpath}"

    @property
    def duckdb_type(self) -> str:
        """The field's DuckDB column type (a list of it when `all`)."""
        base = DUCKDB_TYPES[self.type]
        return f"{base}[]" if self.all else base


@dataclass(frozen=True, slots=True)
class SelectorSet:
    """A named set of fields, and the URLs it applies to."""

    name: str
    fields: tuple[Field, ...]
    urls: str | None = None

    def applies_to(self, url: str) -> bool:
        """Whether a page fetched as `url` (the task's URL) is extracted with this set."""
        return self.urls is None or re.search(self.urls, url) is not None


def parse_selector_set(name: str, data: Any, *, source: str) -> SelectorSet:
    """The selector set `name` from a file's parsed content.

    Args:
        name: the set's name (the file's stem).
        data: what YAML or JSON read from the file.
        source: the file, for messages.

    Raises:
        SelectorSetError: naming `source` and the field: an unknown key or type, a field
            with both or neither of `css` and `xpath`, an expression that does not compile.
    """
    problem = set_name_error(name)
    if problem:
        raise SelectorSetError(f"{source}: {problem}")
    if not isinstance(data, Mapping):
        raise SelectorSetError(f"{source}: must hold a mapping with 'fields', got {data!r:.80}")
    unknown = set(data) - _SET_KEYS
    if unknown:
        raise SelectorSetError(f"{source}: unknown keys {sorted(unknown)} (known: urls, fields)")
    urls = data.get("urls")
    if urls is not None:
        if not isinstance(urls, str):
            raise SelectorSetError(f"{source}: urls must be a regex, got {urls!r}")
        try:
            re.compile(urls)
        except re.error as exc:
            raise SelectorSetError(f"{source}: urls {urls!r} is not a valid regex: {exc}") from None
    fields = data.get("fields")
    if not isinstance(fields, Mapping) or not fields:
        raise SelectorSetError(f"{source}: 'fields' must map field names to selectors")
    return SelectorSet(
        name=name,
        fields=tuple(_field(str(key), spec, source) for key, spec in fields.items()),
        urls=urls,
    )


def _field(name: str, spec: Any, source: str) -> Field:
    where = f"{source}: field {name!r}"
    if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
        raise SelectorSetError(f"{where}: a field name is letters, digits and '_'")
    if name in RESERVED_FIELDS:
        raise SelectorSetError(f"{where}: the name is a column of every row; pick another")
    if isinstance(spec, str):
        spec = {"css": spec}
    if not isinstance(spec, Mapping):
        raise SelectorSetError(f"{where}: must be a CSS selector or a mapping, got {spec!r}")
    unknown = set(spec) - _FIELD_KEYS
    if unknown:
        raise SelectorSetError(f"{where}: unknown keys {sorted(unknown)}")
    css, xpath = spec.get("css"), spec.get("xpath")
    if (css is None) == (xpath is None):
        raise SelectorSetError(f"{where}: give exactly one of css and xpath")
    expression = css if css is not None else xpath
    if not isinstance(expression, str) or not expression.strip():
        raise SelectorSetError(f"{where}: the selector must be a non-empty string")
    kind = spec.get("type", "string")
    if kind not in TYPES:
        raise SelectorSetError(f"{where}: type must be one of {', '.join(TYPES)}, got {kind!r}")
    attr = spec.get("attr")
    if attr is not None and (not isinstance(attr, str) or not attr):
        raise SelectorSetError(f"{where}: attr must be an attribute name, got {attr!r}")
    for flag in ("all", "required"):
        if not isinstance(spec.get(flag, False), bool):
            raise SelectorSetError(f"{where}: {flag} must be true or false")
    _compile(css, xpath, where)
    return Field(
        name=name,
        css=css,
        xpath=xpath,
        all=spec.get("all", False),
        attr=attr,
        type=kind,
        required=spec.get("required", False),
    )


_EMPTY = Selector(text="<html></html>")


def _compile(css: str | None, xpath: str | None, where: str) -> None:
    """Run the expression once on an empty page: parsel compiles it the same way there."""
    try:
        if css is not None:
            _EMPTY.css(css)
        else:
            _EMPTY.xpath(xpath or "")
    except (SelectorError, ValueError, etree.XPathError) as exc:
        kind = "css" if css is not None else "xpath"
        expression = css if css is not None else xpath
        raise SelectorSetError(f"{where}: {kind} {expression!r} does not compile: {exc}") from None


def read_selector_set(path: Path) -> SelectorSet:
    """The selector set in `path`, named after the file's stem.

    Raises:
        SelectorSetError: naming `path` when it cannot be read, is not YAML/JSON, or is not a
            valid set (see `parse_selector_set`).
    """
    if path.suffix not in SUFFIXES:
        raise SelectorSetError(f"{path}: a selector set is a {', '.join(SUFFIXES)} file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SelectorSetError(f"{path}: cannot be read: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SelectorSetError(f"{path}: is not valid YAML or JSON: {exc}") from None
    return parse_selector_set(path.stem, data, source=str(path))
