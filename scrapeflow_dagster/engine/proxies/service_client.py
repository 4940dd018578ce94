"""What every proxy service client shares: its error, its one GET, proxy URLs and country lists.

Each service module (`webshare`, `iproyal`, `proxyscrape`) returns `country -> [proxy URL]` with
every proxy also listed under `"*"`. Errors name the service, the redacted URL and the HTTP status,
never the API key (keys travel in headers, and no client error chains an aiohttp or pydantic
exception, whose text or attributes could hold them).
"""

from collections.abc import Iterable, Mapping
from urllib.parse import quote

import aiohttp
from yarl import URL

from scrapeflow_dagster.engine.redact import redact

DEFAULT_SERVICE_TIMEOUT_SECONDS = 30.0


class ProxyServiceError(RuntimeError):
    """A proxy service answered with an error or an unexpected body, or could not be reached."""

    def __init__(self, service: str, url: URL | str, *, status: int | None, detail: str) -> None:
        self.service = service
        self.url = redact(str(url))
        self.status = status
        status_text = f"HTTP {status}" if status is not None else "no response"
        super().__init__(
            f"{service} proxy list request failed ({status_text}): {detail} [{self.url}]"
        )


def proxy_url(
    host: str, port: int, *, username: str | None = None, password: str | None = None
) -> str:
    """Build `http://[user:pass@]host:port`, percent-encoding the credentials.

    Args:
        host: IP address or host name of the proxy.
        port: TCP port of the proxy.
        username: proxy user, if the proxy needs authentication.
        password: proxy password, if the proxy needs authentication.
    """
    if username is None:
        return f"http://{host}:{port}"
    userinfo = quote(username, safe="")
    if password is not None:
        userinfo += ":" + quote(password, safe="")
    return f"http://{userinfo}@{host}:{port}"


def group_by_country(entries: Iterable[tuple[str, str | None]]) -> dict[str, list[str]]:
    """Group `(proxy, country)` pairs by country, listing every proxy under `"*"` as well.

    Args:
        entries: proxies with their country code (`None` or `""` when unknown).
    """
    grouped: dict[str, list[str]] = {"*": []}
    for proxy, country in entries:
        if proxy in grouped["*"]:
            continue
        grouped["*"].append(proxy)
        if country and country != "*":
            grouped.setdefault(country, []).append(proxy)
    return grouped


async def get_body(
    session: aiohttp.ClientSession,
    url: URL,
    *,
    service: str,
    headers: Mapping[str, str],
    timeout_seconds: float,
) -> bytes:
    """GET `url` from a proxy service and return the body of its 200 answer.

    Args:
        session: the HTTP session to ask the API with.
        url: the request URL (redacted in errors).
        service: the service's name, for errors.
        headers: request headers (the API key travels here, never in errors).
        timeout_seconds: bound on the request.

    Raises:
        ProxyServiceError: on a non-200 answer or an unreachable API; it chains no exception,
            whose text could hold the key.
    """
    try:
        async with session.get(
            url,
            headers=dict(headers),
            timeout=aiohttp.ClientTimeout(total=timeout_seconds),
            allow_redirects=False,
        ) as response:
            body = await response.read()
            if response.status != 200:
                reason = redact(response.reason or "")
                raise ProxyServiceError(service, url, status=response.status, detail=reason)
            return body
    except (aiohttp.ClientError, TimeoutError) as exc:
        detail = redact(f"{type(exc).__name__}: {exc}")
        raise ProxyServiceError(service, url, status=None, detail=detail) from None


def unexpected_body_error(service: str, url: URL) -> ProxyServiceError:
    """The error for a 200 answer whose body does not have the shape the service documents.

    Args:
        service: the service's name.
        url: the request URL (redacted in the error).
    """
    return ProxyServiceError(service, url, status=200, detail="unexpected response body")
