"""Task keys and URLs: what is safe as a file name and a Dagster partition key, and dedup keys."""

import functools
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from yarl import URL

from scrapeflow_dagster.engine.canonical import _canonical, canonical_url, validate_url
from scrapeflow_dagster.engine.errors import InvalidTaskError
from scrapeflow_dagster.engine.tasks.urls import host_port

__all__ = ["canonical_url", "validate_url"]  # kept here too: their first home

MAX_KEY_LENGTH = 200
# Control characters break file names, logs and the Dagster UI.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# `/` and `\` escape the folder; `..` covers `.`-traversal and Dagster's `...` range syntax;
# `,` separates keys on the `dagster` command line.
_FORBIDDEN = ("/", "\\", "..", ",")
# Readable keys: host, the last path segments, then a short fingerprint (48 bits: a clash needs
# ~16 million requests with the same host and slug).
SHORT_FINGERPRINT = 12
_SLUG_SEGMENTS = 2
_MAX_HOST_CHARS = 60
_MAX_SLUG_CHARS = 60
_SLUG_UNSAFE = re.compile(r"[^a-z0-9._-]+")
_DOTS = re.compile(r"\.{2,}")
_LEGACY_KEY = re.compile(r"[0-9a-f]{32}")
_READABLE_TAIL = re.compile(r"(?:^|-)([0-9a-f]{12})$")


def validate_key(key: object) -> str:
    """Return `key` if it is safe as a file name and a partition key.

    Raises:
        InvalidTaskError: naming the key and what is wrong with it (a `ValueError`).
    """
    if not isinstance(key, str) or not key.strip():
        raise InvalidTaskError(f"task key {key!r} must be a non-empty string")
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidTaskError(f"task key {key[:40]!r}... is longer than {MAX_KEY_LENGTH} chars")
    if _CONTROL.search(key):
        raise InvalidTaskError(f"task key {key!r} contains a control character")
    if key.startswith(".") or key != key.strip():
        raise InvalidTaskError(f"task key {key!r} starts with '.' or has outer white space")
    for bad in _FORBIDDEN:
        if bad in key:
            raise InvalidTaskError(f"task key {key!r} contains {bad!r}")
    return key


def _fingerprint(canonical: str, method: str, body: Mapping[str, Any] | None) -> str:
    payload = orjson.dumps(body, option=orjson.OPT_SORT_KEYS) if body is not None else b""
    material = f"{method.upper()}\n{canonical}\n".encode() + payload
    return hashlib.sha256(material).hexdigest()[:32]


def request_fingerprint(
    url: str, *, method: str = "GET", body: Mapping[str, Any] | None = None
) -> str:
    """The identity of a request: a hash of method, canonical URL and canonical JSON body.

    The same request (however its query is ordered or its URL spelled) gets the same
    fingerprint. It was the whole default key before keys became readable, so tasks stored
    then keep it as their key (`legacy` keys).
    """
    return _fingerprint(canonical_url(url), method, body)


def request_key(url: str, *, method: str = "GET", body: Mapping[str, Any] | None = None) -> str:
    """A readable, stable key for a request: `<host>-<path slug>-<short fingerprint>`, e.g.
    `shop.example.com-products-shoes-3f9a1c2b7d`.

    The host and slug make a partition readable in the Dagster UI; the fingerprint keeps the
    key unique per request, so adding the same request twice never makes two tasks. Within
    Dagster's and our key rules (no `..`, `/`, `,`; at most `MAX_KEY_LENGTH`).
    """
    parsed = validate_url(url)
    return _readable_key(parsed, _fingerprint(_canonical(parsed), method, body), method)


@dataclass(frozen=True, slots=True)
class LinkIdentity:
    """A GET request for a link: its URL as given (what is requested and stored), its
    canonical URL and fingerprint (what de-duplicates) and the key `request_key` gives."""

    url: str
    canonical: str
    fingerprint: str
    key: str
    host: str  # lower case, without the port
    origin: str  # `scheme://host:port`, the port always written (whose robots.txt applies)


def link_identity(url: str) -> LinkIdentity:
    """`canonical_url`, `request_fingerprint` and `request_key` of a GET of `url`, from one parse
    (discovery computes them for every link it sees).

    Raises:
        InvalidTaskError: as `validate_url` does.
    """
    parsed = validate_url(url)
    canonical = _canonical(parsed)
    fingerprint = _fingerprint(canonical, "GET", None)
    key = _readable_key(parsed, fingerprint, "GET")
    # Spelled as `polite.robots.origin_of` spells it (the name of the robots.txt cache file).
    origin = f"{parsed.scheme}://{host_port(parsed)}"
    return LinkIdentity(
        url.strip(), canonical, fingerprint, key, (parsed.host or "").lower(), origin
    )


def short_fingerprint_of_key(key: str) -> str | None:
    """The fingerprint part a derived key carries (the first `SHORT_FINGERPRINT` hex digits:
    the end of a readable key, or all of a bare legacy key); None for a key given by hand."""
    if _LEGACY_KEY.fullmatch(key):
        return key[:SHORT_FINGERPRINT]
    found = _READABLE_TAIL.search(key)
    return found.group(1) if found else None


@functools.lru_cache(maxsize=4096)
def _host_slug(raw_host: str) -> str:
    # Cached: a crawl's links share few hosts, and discovery makes keys for every link.
    host = _SLUG_UNSAFE.sub("-", raw_host.lower()).strip("-.")  # punycode
    return _DOTS.sub(".", host)[:_MAX_HOST_CHARS].strip("-.")


def _readable_key(parsed: URL, fingerprint: str, method: str) -> str:
    fingerprint = fingerprint[:SHORT_FINGERPRINT]
    host = _host_slug(parsed.raw_host or "")
    segments = [s for s in parsed.path.split("/") if s][-_SLUG_SEGMENTS:]
    slug = _SLUG_UNSAFE.sub("-", "-".join(segments).lower()).strip("-")[:_MAX_SLUG_CHARS]
    if ".." in slug:  # the regex is only needed then (discovery makes a key per link)
        slug = _DOTS.sub(".", slug)
    slug = slug.strip("-.")
    prefix = "post-" if method.upper() == "POST" else ""
    return "-".join(
        p for p in (host, prefix + slug if slug else prefix.rstrip("-"), fingerprint) if p
    )


def url_to_key(url: str) -> str:
    """scrapeflow's key for a URL: the md5 hex of the URL as given."""
    return hashlib.md5(url.encode()).hexdigest()
