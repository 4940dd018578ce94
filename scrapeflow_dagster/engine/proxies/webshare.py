"""Webshare: the direct proxies of an account, listed page by page through its API."""

import os
from typing import Unpack

import aiohttp
from pydantic import BaseModel, Field, ValidationError
from yarl import URL

from scrapeflow_dagster.engine.proxies.provider import ProxyProvider, ProxyProviderOptions
from scrapeflow_dagster.engine.proxies.service_client import (
    DEFAULT_SERVICE_TIMEOUT_SECONDS,
    get_body,
    group_by_country,
    proxy_url,
    unexpected_body_error,
)
from scrapeflow_dagster.engine.redact import redact

# Webshare lists at most a few thousand proxies per account; this only stops a looping `next`.
_MAX_WEBSHARE_PAGES = 1000


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
        body = await get_body(
            session, url, service="Webshare", headers=headers, timeout_seconds=timeout_seconds
        )
        try:
            page = _WebsharePage.model_validate_json(body)
        except ValidationError:
            raise unexpected_body_error("Webshare", url) from None
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


class ProxyProviderFromWebshare(ProxyProvider):
    """The direct proxies of a Webshare account, fetched by `load()`."""

    _loads_from_service = True

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str = "https://proxy.webshare.io",
        page_size: int = 100,
        **options: Unpack[ProxyProviderOptions],
    ) -> None:
        """Create an unloaded pool.

        Args:
            api_key: Webshare API key; read from `WEBSHARE_API_KEY` when `None`.
            base_url: API root (a local fake in tests).
            page_size: proxies asked for per page of the list.
            **options: see `ProxyProvider.__init__`.

        Raises:
            ValueError: when no API key is given and `WEBSHARE_API_KEY` is unset or empty.
        """
        super().__init__(**options)
        key = api_key or os.environ.get("WEBSHARE_API_KEY")
        if not key:
            raise ValueError("Webshare needs an API key: pass api_key= or set WEBSHARE_API_KEY")
        self._api_key = key
        self.base_url = base_url
        self.page_size = page_size

    def _repr_fields(self) -> dict[str, object]:
        return {"base_url": redact(self.base_url)} | super()._repr_fields()

    async def _fetch(self, session: aiohttp.ClientSession) -> dict[str, list[str]]:
        return await fetch_webshare(
            session, api_key=self._api_key, base_url=self.base_url, page_size=self.page_size
        )
