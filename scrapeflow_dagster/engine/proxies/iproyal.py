"""IPRoyal: the proxies of one reseller order, listed under the order's location."""

import os
from typing import Unpack
from urllib.parse import quote

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
    body = await get_body(
        session,
        url,
        service="IPRoyal",
        headers={"X-Access-Token": api_key},
        timeout_seconds=timeout_seconds,
    )
    try:
        order = _IPRoyalOrder.model_validate_json(body)
    except ValidationError:
        raise unexpected_body_error("IPRoyal", url) from None
    return group_by_country(
        (proxy_url(p.ip, p.port, username=p.username, password=p.password), order.location)
        for p in order.proxy_data.proxies
    )


class ProxyProviderFromIPRoyal(ProxyProvider):
    """The proxies of one IPRoyal reseller order, fetched by `load()`."""

    _loads_from_service = True

    def __init__(
        self,
        *,
        api_key: str | None = None,
        order_id: str | None = None,
        base_url: str = "https://apid.iproyal.com",
        **options: Unpack[ProxyProviderOptions],
    ) -> None:
        """Create an unloaded pool.

        Args:
            api_key: IPRoyal API token; read from `IPROYAL_API_KEY` when `None`.
            order_id: the order whose proxies are used; read from `IPROYAL_ORDER_ID` when `None`.
            base_url: API root (a local fake in tests).
            **options: see `ProxyProvider.__init__`.

        Raises:
            ValueError: when the key or the order id is missing (naming the environment variable).
        """
        super().__init__(**options)
        key = api_key or os.environ.get("IPROYAL_API_KEY")
        if not key:
            raise ValueError("IPRoyal needs an API key: pass api_key= or set IPROYAL_API_KEY")
        order = order_id or os.environ.get("IPROYAL_ORDER_ID")
        if not order:
            raise ValueError("IPRoyal needs an order id: pass order_id= or set IPROYAL_ORDER_ID")
        self._api_key = key
        self.order_id = order
        self.base_url = base_url

    def _repr_fields(self) -> dict[str, object]:
        fields: dict[str, object] = {"base_url": redact(self.base_url), "order_id": self.order_id}
        return fields | super()._repr_fields()

    async def _fetch(self, session: aiohttp.ClientSession) -> dict[str, list[str]]:
        return await fetch_iproyal(
            session, api_key=self._api_key, order_id=self.order_id, base_url=self.base_url
        )
