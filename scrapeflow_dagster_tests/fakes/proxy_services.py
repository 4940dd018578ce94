"""A local aiohttp app speaking the Webshare, IPRoyal and Proxyscrape proxy-list APIs.

Only the parts the providers use: Webshare's paginated list behind `Authorization: Token`,
IPRoyal's reseller order behind `X-Access-Token`, Proxyscrape's free list. A wrong key gets 401.
"""

import math
from types import TracebackType
from typing import Self

from aiohttp import web

WEBSHARE_KEY = "ws-key-SECRET-1111"
IPROYAL_KEY = "ipr-key-SECRET-2222"
IPROYAL_ORDER_ID = "order-42"
PROXY_PASSWORD = "pw-SECRET-3333"

# Seven Webshare proxies: three pages of three with page_size=3; one is not valid.
WEBSHARE_PROXIES: list[dict[str, object]] = [
    {
        "username": f"wsuser{i}",
        "password": PROXY_PASSWORD,
        "proxy_address": f"10.0.0.{i}",
        "port": 8000 + i,
        "country_code": "US" if i % 2 else "DE",
        "valid": i != 4,
    }
    for i in range(1, 8)
]

IPROYAL_ORDER: dict[str, object] = {
    "id": IPROYAL_ORDER_ID,
    "location": "GB",
    "proxy_data": {
        "proxies": [
            {"ip": f"10.1.0.{i}", "port": 12323, "username": "ipr", "password": PROXY_PASSWORD}
            for i in range(1, 4)
        ]
    },
}

PROXYSCRAPE_PROXIES: list[dict[str, object]] = [
    {"proxy": "http://10.2.0.1:80", "protocol": "http", "ip_data": {"countryCode": "US"}},
    {"proxy": "http://10.2.0.2:8080", "protocol": "http", "ip_data": {"countryCode": "FR"}},
    {"proxy": "https://10.2.0.3:443", "protocol": "https", "ip_data": {"countryCode": "US"}},
    {"proxy": "socks5://10.2.0.4:1080", "protocol": "socks5", "ip_data": {"countryCode": "US"}},
    {"proxy": "http://10.2.0.5:3128", "protocol": "http"},
]


class FakeProxyServices:
    """The three proxy-list APIs on one local port; `requests` logs every path asked for.

    `proxyscrape_proxies` replaces the free list (to list local proxies that can be checked).
    """

    def __init__(self, *, proxyscrape_proxies: list[dict[str, object]] | None = None) -> None:
        self.requests: list[str] = []
        self.proxyscrape_proxies = (
            PROXYSCRAPE_PROXIES if proxyscrape_proxies is None else proxyscrape_proxies
        )
        self.base_url = ""
        self._runner: web.AppRunner | None = None

    def make_app(self) -> web.Application:
        """The aiohttp application with the three services' routes."""
        app = web.Application()
        app.router.add_get("/api/v2/proxy/list/", self._webshare)
        app.router.add_get("/v1/reseller/orders/{order_id}", self._iproyal)
        app.router.add_get("/v4/free-proxy-list/get", self._proxyscrape)
        return app

    async def start(self) -> str:
        """Serve on 127.0.0.1 (a free port) and return the base URL."""
        self._runner = web.AppRunner(self.make_app())
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.base_url = f"http://127.0.0.1:{port}"
        return self.base_url

    async def close(self) -> None:
        """Stop serving."""
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _webshare(self, request: web.Request) -> web.Response:
        self.requests.append(request.path_qs)
        if request.headers.get("Authorization") != f"Token {WEBSHARE_KEY}":
            return web.json_response({"detail": "Invalid token."}, status=401)
        if request.query.get("mode") != "direct":
            return web.json_response({"detail": "mode must be direct"}, status=400)
        page = int(request.query.get("page", "1"))
        page_size = int(request.query.get("page_size", "25"))
        pages = max(1, math.ceil(len(WEBSHARE_PROXIES) / page_size))
        if page > pages:
            return web.json_response({"detail": "Invalid page."}, status=404)
        results = WEBSHARE_PROXIES[(page - 1) * page_size : page * page_size]
        next_url = None
        if page < pages:
            next_url = str(request.url.update_query(page=page + 1))
        return web.json_response(
            {"count": len(WEBSHARE_PROXIES), "next": next_url, "results": results}
        )

    async def _iproyal(self, request: web.Request) -> web.Response:
        self.requests.append(request.path_qs)
        if request.headers.get("X-Access-Token") != IPROYAL_KEY:
            return web.json_response({"message": "Unauthenticated."}, status=401)
        if request.match_info["order_id"] != IPROYAL_ORDER_ID:
            return web.json_response({"message": "Not found."}, status=404)
        return web.json_response(IPROYAL_ORDER)

    async def _proxyscrape(self, request: web.Request) -> web.Response:
        self.requests.append(request.path_qs)
        expected = {
            "request": "display_proxies",
            "proxy_format": "protocolipport",
            "format": "json",
        }
        if any(request.query.get(name) != value for name, value in expected.items()):
            return web.Response(status=400, text="bad request")
        country = request.query.get("country", "all")
        proxies = [
            proxy
            for proxy in self.proxyscrape_proxies
            if country == "all" or _country_of(proxy) == country
        ]
        return web.json_response({"shown_records": len(proxies), "proxies": proxies})


def _country_of(proxy: dict[str, object]) -> str | None:
    ip_data = proxy.get("ip_data")
    return ip_data.get("countryCode") if isinstance(ip_data, dict) else None
