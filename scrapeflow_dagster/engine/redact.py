"""Keep credentials out of everything we write: status files, DuckDB, logs, metadata, errors."""

import functools
import re
from collections.abc import Mapping
from typing import Any

from yarl import URL

# A URL (or what looks like one) in a text: its scheme, then everything up to a blank or quote.
_URL = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<rest>[^\s'\"<>]*)")
# Where a URL's authority ends (WHATWG: the first `/`, `?`, `#`, or `\` of a special URL).
_AUTHORITY_END = re.compile(r"[/?#\\]")
_QUERY_START = re.compile(r"[?#]")
# API keys passed as query parameters or auth headers that aiohttp may echo in messages.
_SECRET_PARAMS = re.compile(
    r"(?i)(?P<name>api[_-]?key|apikey|token|password|passwd|secret|auth)=(?P<value>[^&\s'\"]+)"
)


def redact(text: str) -> str:
    """Return `text` with URL credentials and secret-looking query values replaced by `***`.

    Only a URL's userinfo (`scheme://user:pass@host`, `scheme://token@host`) is a credential:
    an `@` in a path or query (`/list/dev@python.org/`, `/package/@types/node`, `/@user`)
    stays as written.
    """
    if "@" not in text and "=" not in text:  # neither pattern can match: skip the regexes
        return text
    if "@" in text:
        text = _URL.sub(_mask_userinfo, text)
    return _SECRET_PARAMS.sub(r"\g<name>=***", text)


def _mask_userinfo(match: re.Match[str]) -> str:
    scheme, rest = match.group("scheme"), match.group("rest")
    end = _AUTHORITY_END.search(rest)
    authority = rest[: end.start()] if end else rest
    at = authority.rfind("@")
    if at >= 0:
        return f"{scheme}{MASK}{rest[at:]}"
    if end is not None and _port_is_not_a_number(authority):
        # `user:pa/ss@host`: a password holding an unescaped `/` (no valid URL, but a proxy
        # setting may be written so). A host's port is a number, so `user:pa` is no host:
        # everything up to the last `@` before the query is userinfo.
        query = _QUERY_START.search(rest)
        at = rest.rfind("@", 0, query.start() if query else len(rest))
        if at > end.start():
            return f"{scheme}{MASK}{rest[at:]}"
    return match.group(0)


def _port_is_not_a_number(authority: str) -> bool:
    host_end = authority.find("]") + 1 if authority.startswith("[") else 0  # IPv6 literal
    colon = authority.find(":", host_end)
    return colon >= 0 and not authority[colon + 1 :].isdigit()


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


# Header names whose values are credentials, in an executor's output (`scrape` keeps the
# response's headers). Only header names: a user's output field called `session_title` or
# `token_count` is data, and stays as written.
_CREDENTIAL_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "x-api-key",
        "api-key",
        "x-auth-token",
        "x-csrf-token",
        "x-xsrf-token",
    }
)
# A whole string that is a URL (scheme, then no blank): where a credential can be in an output.
_WHOLE_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://\S*")


def redact_output(value: Any) -> Any:
    """A copy of an executor's output fit to record in DuckDB.

    Credentials are removed only where they are credentials: the values of credential header
    names (`Set-Cookie`, `Authorization`, ...) at any depth, and a URL's userinfo and secret
    query values in a string that is a whole URL (`redact`). Every other value, prose that
    mentions `token=` included, is recorded as the executor returned it.
    """
    if isinstance(value, str):
        return redact(value) if _WHOLE_URL.fullmatch(value) else value
    if isinstance(value, Mapping):
        return {
            key: MASK
            if isinstance(key, str) and key.lower() in _CREDENTIAL_HEADERS and item
            else redact_output(item)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_output(item) for item in value]
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
