"""Absolute http(s) URLs, checked, and their canonical form: the one de-duplication compares
(task fingerprints, DuckDB's `canonical_url` columns). Never what is requested or stored as a
task's URL: that stays as given.

Shared by `tasks` (keys) and `history` (the rows DuckDB keeps), like `errors` and `redact`.
"""

from yarl import URL

from scrapeflow_dagster.engine.errors import InvalidTaskError
from scrapeflow_dagster.engine.redact import redact


def validate_url(url: object) -> URL:
    """Parse `url` and accept only absolute http(s) URLs with a host.

    Raises:
        InvalidTaskError: naming the URL (`file:`, `ftp:`, `javascript:`, relative, malformed).
    """
    if not isinstance(url, str) or not url.strip():
        raise InvalidTaskError(f"url {_quoted(url)} must be a non-empty string")
    try:
        parsed = URL(url.strip())
    except (ValueError, TypeError) as exc:
        raise InvalidTaskError(f"url {_quoted(url)} is malformed: {redact(str(exc))}") from None
    if parsed.scheme not in ("http", "https"):
        raise InvalidTaskError(f"url {_quoted(url)}: only http and https URLs are fetched")
    if not parsed.host:
        raise InvalidTaskError(f"url {_quoted(url)} has no host")
    return parsed


def _quoted(url: object) -> str:
    # Error messages reach stderr, the inbox's error files and Dagster's logs: a URL is
    # quoted without its password or API key.
    return repr(redact(url)) if isinstance(url, str) else repr(url)


def canonical_url(url: str) -> str:
    """The URL with lower-case scheme and host, no default port, no fragment, sorted query."""
    return _canonical(validate_url(url))


def _canonical(parsed: URL) -> str:
    if not parsed.raw_fragment and not parsed.raw_query_string:
        return str(parsed)  # nothing to drop or sort (most links): no new URL objects
    if not parsed.raw_query_string and parsed.raw_path != "/":
        text = str(parsed)
        # Only a fragment to drop (links to anchors are common): cut the string, as
        # `with_fragment(None)` would, but without a new URL. The general way is kept for a
        # "?" (an empty query, or one inside the fragment: it drops both) and for the root
        # path (yarl writes `http://h#f` as `http://h/#f` but drops the fragment to `http://h`).
        if "?" not in text:
            return text.partition("#")[0]
    parsed = parsed.with_fragment(None)
    query = sorted(parsed.query.items())
    return str(parsed.with_query(query)) if query else str(parsed.with_query(None))
