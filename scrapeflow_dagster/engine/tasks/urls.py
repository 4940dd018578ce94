"""URLs as a browser resolves and sends them (the WHATWG URL Standard, through `ada-url`, the
parser Node.js uses).

Links are requested and stored as the page spells them once resolved: escapes (`%28`, `%3A`),
query order, repeated and bare keys (`?time(3)`) are kept; only what a browser itself changes
is changed (the host lower-cased and IDNA-encoded, a default port dropped, `.`/`..` segments
resolved, characters a URL cannot hold percent-encoded, the fragment dropped: it is never
sent). The canonical form (`keys.canonical_url`) is for de-duplication only.
"""

from ada_url import URL as WhatwgURL
from ada_url import join_url
from yarl import URL

_FETCHED_SCHEMES = ("http:", "https:")


def host_port(url: URL) -> str:
    """`host:port` of `url`, the port always written, an IPv6 host in brackets (`[::1]:80`:
    unbracketed, its colons would read as a port): the unit of per-host slots, and of
    robots.txt's origin after its scheme."""
    host = url.host or ""
    return f"[{host}]:{url.port}" if ":" in host else f"{host}:{url.port}"


def resolve_link(base: str, href: str) -> str | None:
    """`href` resolved against the document's base URL `base`, without its fragment; None when
    it is no http(s) URL (`mailto:`, `javascript:`, `data:`, unparseable).

    Args:
        base: the document's base URL (its `<base href>` resolved against its own URL, else
            its own URL).
        href: the attribute as written (surrounding white space is ignored, as browsers do).
    """
    try:
        href = join_url(base, href.strip())  # serialised: the scheme lower-cased
    except ValueError:
        return None
    if not href.startswith(_FETCHED_SCHEMES):
        return None
    # A serialised URL holds "#" only where its fragment starts (the path, query and userinfo
    # percent-encode sets include it): one parse per link rather than three.
    return href.partition("#")[0]


def document_base(url: str, base_href: str | None) -> str:
    """The base URL of a document fetched from `url` whose `<base href>` (first one, if any)
    is `base_href`: that one resolved against `url` when it parses, else `url`."""
    if base_href is None or not base_href.strip():
        return url
    try:
        return join_url(url, base_href.strip())
    except ValueError:
        return url


def request_url(url: str) -> URL:
    """What a request for `url` is sent to: `url` as a browser serialises it, passed on to
    aiohttp byte for byte (yarl would otherwise decode `%28` to `(` and `%3A` to `:`).

    Raises:
        ValueError: when `url` does not parse.
    """
    return URL(WhatwgURL(url.strip()).href, encoded=True)
