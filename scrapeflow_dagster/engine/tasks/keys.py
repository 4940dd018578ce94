"""Task keys and URLs: what is safe as a file name and a Dagster partition key, and dedup keys."""

import hashlib
import re
from collections.abc import Mapping
from typing import Any

import orjson
from yarl import URL

from scrapeflow_dagster.engine.errors import InvalidTaskError

MAX_KEY_LENGTH = 200
# Control characters break file names, logs and the Dagster UI.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# `/` and `\` escape the folder; `..` covers `.`-traversal and Dagster's `...` range syntax;
# `,` separates keys on the `dagster` command line.
_FORBIDDEN = ("/", "\\", "..", ",")


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


def validate_url(url: object) -> URL:
    """Parse `url` and accept only absolute http(s) URLs with a host.

    Raises:
        InvalidTaskError: naming the URL (`file:`, `ftp:`, `javascript:`, relative, malformed).
    """
    if not isinstance(url, str) or not url.strip():
        raise InvalidTaskError(f"url {url!r} must be a non-empty string")
    try:
        parsed = URL(url.strip())
    except (ValueError, TypeError) as exc:
        raise InvalidTaskError(f"url {url!r} is malformed: {exc}") from None
    if parsed.scheme not in ("http", "https"):
        raise InvalidTaskError(f"url {url!r}: only http and https URLs are fetched")
    if not parsed.host:
        raise InvalidTaskError(f"url {url!r} has no host")
    return parsed


def canonical_url(url: str) -> str:
    """The URL with lower-case scheme and host, no default port, no fragment, sorted query."""
    parsed = validate_url(url).with_fragment(None)
    query = sorted(parsed.query.items())
    return str(parsed.with_query(query)) if query else str(parsed.with_query(None))


def request_key(url: str, *, method: str = "GET", body: Mapping[str, Any] | None = None) -> str:
    """A stable key for a request: hash of method, canonical URL and canonical JSON body.

    The same request (however its query is ordered or its URL spelled) gets the same key, so
    adding it twice never makes two tasks.
    """
    payload = orjson.dumps(body, option=orjson.OPT_SORT_KEYS) if body is not None else b""
    material = f"{method.upper()}\n{canonical_url(url)}\n".encode() + payload
    return hashlib.sha256(material).hexdigest()[:32]


def url_to_key(url: str) -> str:
    """scrapeflow's key for a URL: the md5 hex of the URL as given."""
    return hashlib.md5(url.encode()).hexdigest()
