"""Proxyscrape: the free public list of HTTP(S) proxies, by country (check them before use)."""

from typing import Unpack

import aiohttp
from pydantic import BaseModel, Field, ValidationError
from yarl import URL

from scrapeflow_dagster.engine.proxies.provider import ProxyProvider, ProxyProviderOptions
from scrapeflow_dagster.engine.proxies.service_client import (
    DEFAULT_SERVICE_TIMEOUT_SECONDS,
    get_body,
    group_by_country,
    unexpected_body_error,
)
from scrapeflow_dagster.engine.redact import redact


class _ProxyscrapeIpData(BaseModel):
    country_code: str | None = Field(default=None, alias="countryCode")


class _ProxyscrapeProxy(BaseModel):
    proxy: str
    protocol: str
    ip_data: _ProxyscrapeIpData | None = None


class _ProxyscrapeList(BaseModel):
    proxies: list[_ProxyscrapeProxy]


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
    body = await get_body(
        session, url, service="Proxyscrape", headers={}, timeout_seconds=timeout_seconds
    )
    try:
        listing = _ProxyscrapeList.model_validate_json(body)
    except ValidationError:
        raise unexpected_body_error("Proxyscrape", url) from None
    return group_by_country(
        (
            p.proxy if "://" in p.proxy else f"{p.protocol.lower()}://{p.proxy}",
            p.ip_data.country_code if p.ip_data else None,
        )
        for p in listing.proxies
        if p.protocol.lower() in ("http", "https")
    )


class ProxyProviderFromProxyscrape(ProxyProvider):
    """Proxyscrape's free list, fetched by `load()`; run `check_proxies()` before using it."""

    _loads_from_service = True

    def __init__(
        self,
        *,
        base_url: str = "https://api.proxyscrape.com",
        country: str = "all",
        timeout_ms: int = 10000,
        **options: Unpack[ProxyProviderOptions],
    ) -> None:
        """Create an unloaded pool.

        Args:
            base_url: API root (a local fake in tests).
            country: the service's country filter; `all` for every country.
            timeout_ms: the service's filter: leave out proxies slower than this.
            **options: see `ProxyProvider.__init__`.
        """
        super().__init__(**options)
        self.base_url = base_url
        self.country = country
        self.timeout_ms = timeout_ms

    def _repr_fields(self) -> dict[str, object]:
        return {"base_url": redact(self.base_url), "country": self.country} | super()._repr_fields()

    async def _fetch(self, session: aiohttp.ClientSession) -> dict[str, list[str]]:
        return await fetch_proxyscrape(
            session, base_url=self.base_url, country=self.country, timeout_ms=self.timeout_ms
        )
