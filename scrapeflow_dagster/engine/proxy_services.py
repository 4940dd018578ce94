"""Fetch proxy lists from Webshare, IPRoyal and Proxyscrape.

Each fetcher is a plain async function returning `country -> [proxy URL]`, with every proxy also
listed under `"*"`. Errors name the service, the redacted URL and the HTTP status, never the API
key (keys travel in headers, and no fetcher error chains an aiohttp or pydantic exception, whose
text or attributes could hold them).
"""

from collections.abc import Iterable, Mapping
from urllib.parse import quote

import aiohttp
from pydantic import BaseModel, Field, ValidationError
from yarl import URL

from scrapeflow_dagster.engine.redact import redact

DEFAULT_SERVICE_TIMEOUT_SECONDS = 30.0
# Webshare lists at most a few thousand proxies per account; this only stops a looping `next`.
_MAX_WEBSHARE_PAGES = 1000


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


class _WebshareProxy(BaseModel):
    username: str = Field(repr=False)
    password: str = Field(repr=False)
    proxy_address: str | None = None
    port: int
    country_code: str | None = None
    valid: bool = True


class _WebsharePage(BaseModel):
    count: int = 0
    next: str | None = None
    results: list[_WebshareProxy]


class _IPRoyalProxy(BaseModel):
    ip: str
    port: int
    username: str = Field(repr=False)
    password: str = Field(repr=False)


class _IPRoyalProxyData(BaseModel):
    proxies: list[_IPRoyalProxy]


class _IPRoyalOrder(BaseModel):
    location: str | None = None
    proxy_data: _IPRoyalProxyData


class _ProxyscrapeIpData(BaseModel):
    country_code: str | None = Field(default=None, alias="countryCode")


class _ProxyscrapeProxy(BaseModel):
    proxy: str
    protocol: str
    ip_data: _ProxyscrapeIpData | None = None


class _ProxyscrapeList(BaseModel):
    proxies: list[_ProxyscrapeProxy]


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


async def _get_body(
    session: aiohttp.ClientSession,
    url: URL,
    *,
    service: str,
    headers: Mapping[str, str],
    timeout_seconds: float,
) -> bytes:
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


def _shape_error(service: str, url: URL) -> ProxyServiceError:
    return ProxyServiceError(service, url, status=200, detail="unexpected response body")


async def fetch_webshare(
    session: aiohttp.ClientSession,
    *,
    api_key: str,
    base_url: str,
    page_size: int,
    timeout_seconds: float = DEFAULT_SERVICE_TIMEOUT_SECONDS,
) -> dict[str, list[str]]:
    """List the valid direct proxies of a Webshare account, following every page.

    Args:
        session: the HTTP session to ask the API with.
        api_key: Webshare API key, sent as `Authorization: Token <key>`.
        base_url: API root, `https://proxy.webshare.io` in production.
        page_size: proxies asked for per page.
        timeout_seconds: bound on each page request.

    Raises:
        ProxyServiceError: on a non-200 answer (401 for a bad key), an unreachable API or an
            unexpected body.
    """
    endpoint = URL(base_url.rstrip("/") + "/api/v2/proxy/list/")
    headers = {"Authorization": f"Token {api_key}"}
    entries: list[tuple[str, str | None]] = []
    for page_number in range(1, _MAX_WEBSHARE_PAGES + 1):
        url = endpoint.with_query(mode="direct", page=page_number, page_size=page_size)
        body = await _get_body(
            session, url, service="Webshare", headers=headers, timeout_seconds=timeout_seconds
        )
        try:
            page = _WebsharePage.model_validate_json(body)
        except ValidationError:
            raise _shape_error("Webshare", url) from None
        entries.extend(
            (
                proxy_url(p.proxy_address, p.port, username=p.username, password=p.password),
                p.country_code,
            )
            for p in page.results
            if p.valid and p.proxy_address
        )
        if page.next is None or not page.results:
            break
    return group_by_country(entries)


async def fetch_iproyal(
    session: aiohttp.ClientSession,
    *,
    api_key: str,
    order_id: str,
    base_url: str,
    timeout_seconds: float = DEFAULT_SERVICE_TIMEOUT_SECONDS,
) -> dict[str, list[str]]:
    """List the proxies of one IPRoyal reseller order, under the order's location and `"*"`.

    Args:
        session: the HTTP session to ask the API with.
        api_key: IPRoyal API token, sent as `X-Access-Token`.
        order_id: the order whose proxies are listed.
        base_url: API root, `https://apid.iproyal.com` in production.
        timeout_seconds: bound on the request.

    Raises:
        ProxyServiceError: on a non-200 answer, an unreachable API or an unexpected body.
    """
    url = URL(base_url.rstrip("/") + "/v1/reseller/orders/" + quote(order_id, safe=""))
    body = await _get_body(
        session,
        url,
        service="IPRoyal",
        headers={"X-Access-Token": api_key},
        timeout_seconds=timeout_seconds,
    )
    try:
        order = _IPRoyalOrder.model_validate_json(body)
    except ValidationError:
        raise _shape_error("IPRoyal", url) from None
    return group_by_country(
        (proxy_url(p.ip, p.port, username=p.username, password=p.password), order.location)
        for p in order.proxy_data.proxies
    )


async def fetch_proxyscrape(
    session: aiohttp.ClientSession,
    *,
    base_url: str,
    country: str,
    timeout_ms: int,
    timeout_seconds: float = DEFAULT_SERVICE_TIMEOUT_SECONDS,
) -> dict[str, list[str]]:
    """List Proxyscrape's free HTTP(S) proxies, grouped by their country code.

    Args:
        session: the HTTP session to ask the API with.
        base_url: API root, `https://api.proxyscrape.com` in production.
        country: country filter understood by the service (`all` for every country).
        timeout_ms: the service's own filter: proxies slower than this are left out.
        timeout_seconds: bound on the request.

    Raises:
        ProxyServiceError: on a non-200 answer, an unreachable API or an unexpected body.
    """
    url = URL(base_url.rstrip("/") + "/v4/free-proxy-list/get").with_query(
        request="display_proxies",
        proxy_format="protocolipport",
        format="json",
        country=country,
        timeout=timeout_ms,
    )
    body = await _get_body(
        session, url, service="Proxyscrape", headers={}, timeout_seconds=timeout_seconds
    )
    try:
        listing = _ProxyscrapeList.model_validate_json(body)
    except ValidationError:
        raise _shape_error("Proxyscrape", url) from None
    return group_by_country(
        (
            p.proxy if "://" in p.proxy else f"{p.protocol.lower()}://{p.proxy}",
            p.ip_data.country_code if p.ip_data else None,
        )
        for p in listing.proxies
        if p.protocol.lower() in ("http", "https")
    )
