"""The URLs the sitemap reader (`crawl.sitemaps`) takes: which may be fetched at all (http(s)
with a host: never a `file:`, `ftp:`, `gopher:` or `data:` URL a sitemap or robots.txt names,
see Crawlee's CVE-2026-46497), and which site one is on (the sitemaps.org host rule)."""

from yarl import URL

from scrapeflow_dagster.engine.tasks.urls import request_url

FETCHED_SCHEMES = ("http", "https")


def fetchable_url(raw: str) -> URL:
    """`raw` as the URL to request (`tasks.urls.request_url`).

    Raises:
        ValueError: it does not parse ("is not a URL"), or is no http(s) URL with a host.
    """
    try:
        url = request_url(raw)
    except ValueError:
        raise ValueError("is not a URL") from None
    if url.scheme not in FETCHED_SCHEMES or not url.raw_host:
        raise ValueError("is not an http(s) URL: never fetched")
    return url


def site_of(url: URL) -> str:
    """The site a sitemap may list pages of: its host, and its port when not the scheme's
    default (sitemaps.org asks for one protocol too; a site moved to https whose sitemaps
    still say http is common enough that both schemes count as one site)."""
    port = url.explicit_port
    host = (url.host or "").lower()
    return host if port is None or port in (80, 443) else f"{host}:{port}"
