"""Keep credentials out of everything we write: status files, DuckDB, logs, metadata, errors."""

import re

from yarl import URL

# `scheme://user:pass@host` or `scheme://token@host`, anywhere in a text.
_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s@'\"]+@")
# API keys passed as query parameters or auth headers that aiohttp may echo in messages.
_SECRET_PARAMS = re.compile(
    r"(?i)(?P<name>api[_-]?key|apikey|token|password|passwd|secret|auth)=(?P<value>[^&\s'\"]+)"
)


def redact(text: str) -> str:
    """Return `text` with URL credentials and secret-looking query values replaced by `***`."""
    if "@" not in text and "=" not in text:  # neither pattern can match: skip the regexes
        return text
    text = _USERINFO.sub(r"\g<scheme>***@", text)
    return _SECRET_PARAMS.sub(r"\g<name>=***", text)


def proxy_host(proxy_url: str | None) -> str | None:
    """`host:port` of a proxy URL, without scheme or credentials (what we may record)."""
    if not proxy_url:
        return None
    try:
        url = URL(proxy_url)
    except ValueError:
        return "invalid-proxy-url"
    if url.host is None:
        return "invalid-proxy-url"
    return f"{url.host}:{url.port}" if url.port else url.host
