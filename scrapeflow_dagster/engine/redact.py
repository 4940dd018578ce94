"""Keep credentials out of everything we write: status files, DuckDB, logs, metadata, errors."""

import functools
import re
from collections.abc import Mapping
from typing import Any

from yarl import URL

# `scheme://user:pass@host` or `scheme://token@host`, anywhere in a text, up to the last `@`
# before the query: a password may hold a `/` or `:` unescaped. (A path with an `@` in it loses
# its host too: shown too little rather than a password shown.)
_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^\s@'\"?#]*@")
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


MASK = "***"
# Names whose values are credentials wherever they appear in a task's params: header names
# (`Authorization`, `X-Api-Key`, `Cookie`), form and JSON body fields (`password`, `token`).
_SECRET_NAMES = re.compile(
    r"(?i)auth(?!ors?\b)|token|passw|secret|api[_-]?key|apikey|cookie|session|credential"
    r"|signature"
)


def redact_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a task's params fit to show or record outside its status file.

    URLs lose their credentials and secret-looking query values (`redact`), every cookie value
    and every value under a credential-like name (`Authorization` header, `password` field of
    a POST payload, at any depth) becomes `***`. The status file keeps the real params: the
    task needs them to run.
    """
    redacted = {}
    for name, value in params.items():
        # Most params are plain text and numbers under harmless names (the crawl settings a
        # discovered task inherits): handled here without `_redact_value`'s walk.
        if type(name) is not str or _is_secret_name(name):
            redacted[name] = _redact_value(name, value)
        elif type(value) is str:
            redacted[name] = redact(value)
        elif type(value) is int or value is None:
            redacted[name] = value
        else:
            redacted[name] = _redact_value(name, value)
    return redacted


@functools.lru_cache(maxsize=1024)
def _is_secret_name(name: str) -> bool:
    # Cached: every task recorded asks about the same few param and header names.
    return name == "cookies" or _SECRET_NAMES.search(name) is not None


def _redact_value(name: object, value: Any) -> Any:
    if isinstance(name, str) and _is_secret_name(name):
        if isinstance(value, Mapping):  # `cookies`, `headers.Cookie`: names stay, values go
            return {key: MASK for key in value}
        return MASK if value not in (None, "") else value
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {key: _redact_value(key, item) for key, item in value.items()}
    if isinstance(value, list):
        return [_redact_value(None, item) for item in value]
    return value


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
