"""The three proxy services (Webshare, IPRoyal, Proxyscrape) against their local fakes."""

import aiohttp
import pytest

from scrapeflow_dagster.engine.proxies import (
    ProxyProviderFromIPRoyal,
    ProxyProviderFromProxyscrape,
    ProxyProviderFromWebshare,
    ProxyServiceError,
)
from scrapeflow_dagster_tests.engine.proxies.helpers import assert_no_secret
from scrapeflow_dagster_tests.fakes.forward_proxy import closed_port_url
from scrapeflow_dagster_tests.fakes.proxy_services import (
    IPROYAL_KEY,
    IPROYAL_ORDER_ID,
    PROXY_PASSWORD,
    WEBSHARE_KEY,
    FakeProxyServices,
)


async def test_webshare_follows_every_page(services: FakeProxyServices) -> None:
    provider = ProxyProviderFromWebshare(
        api_key=WEBSHARE_KEY, base_url=services.base_url, page_size=3
    )
    assert provider.get_one_proxy() is None  # not loaded yet
    async with aiohttp.ClientSession() as session:
        await provider.load(session)
        await provider.load(session)
    assert len(services.requests) == 3
    assert [path.split("page=")[1][0] for path in services.requests] == ["1", "2", "3"]
    assert len(provider.proxies["*"]) == 6  # proxy 4 is not valid
    assert provider.proxies["US"] == [
        f"http://wsuser{i}:{PROXY_PASSWORD}@10.0.0.{i}:{8000 + i}" for i in (1, 3, 5, 7)
    ]
    assert provider.proxies["DE"] == [
        f"http://wsuser{i}:{PROXY_PASSWORD}@10.0.0.{i}:{8000 + i}" for i in (2, 6)
    ]
    assert provider.get_one_proxy("DE") == provider.proxies["DE"][0]
    assert_no_secret(repr(provider))
    assert_no_secret(repr(provider.health()))


async def test_webshare_key_comes_from_the_environment(
    services: FakeProxyServices, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEBSHARE_API_KEY", WEBSHARE_KEY)
    provider = ProxyProviderFromWebshare(base_url=services.base_url)
    await provider.load()
    assert len(provider.proxies["*"]) == 6
    assert len(services.requests) == 1


def test_missing_keys_name_the_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("WEBSHARE_API_KEY", "IPROYAL_API_KEY", "IPROYAL_ORDER_ID"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="WEBSHARE_API_KEY"):
        ProxyProviderFromWebshare()
    with pytest.raises(ValueError, match="IPROYAL_API_KEY"):
        ProxyProviderFromIPRoyal(order_id=IPROYAL_ORDER_ID)
    with pytest.raises(ValueError, match="IPROYAL_ORDER_ID"):
        ProxyProviderFromIPRoyal(api_key=IPROYAL_KEY)


async def test_a_bad_webshare_key_is_a_clear_error_without_the_key(
    services: FakeProxyServices,
) -> None:
    provider = ProxyProviderFromWebshare(api_key="wrong-SECRET-key", base_url=services.base_url)
    with pytest.raises(ProxyServiceError) as caught:
        await provider.load()
    error = caught.value
    assert isinstance(error, RuntimeError)
    assert error.status == 401
    assert "Webshare" in str(error) and "HTTP 401" in str(error)
    assert services.base_url in str(error)
    for text in (str(error), repr(error), repr(error.args), repr(provider)):
        assert "wrong-SECRET-key" not in text
    assert error.__cause__ is None
    assert provider.proxies == {}


async def test_iproyal_lists_the_order_under_its_location(services: FakeProxyServices) -> None:
    provider = ProxyProviderFromIPRoyal(
        api_key=IPROYAL_KEY, order_id=IPROYAL_ORDER_ID, base_url=services.base_url
    )
    await provider.load()
    expected = [f"http://ipr:{PROXY_PASSWORD}@10.1.0.{i}:12323" for i in (1, 2, 3)]
    assert provider.proxies == {"*": expected, "GB": expected}
    assert provider.get_one_proxy("US") == expected[0]  # falls back to "*"
    assert_no_secret(repr(provider))


@pytest.mark.parametrize(
    ("api_key", "order_id", "status"),
    [("wrong-SECRET-key", IPROYAL_ORDER_ID, 401), (IPROYAL_KEY, "no-such-order", 404)],
)
async def test_iproyal_errors_carry_the_status(
    services: FakeProxyServices, api_key: str, order_id: str, status: int
) -> None:
    provider = ProxyProviderFromIPRoyal(
        api_key=api_key, order_id=order_id, base_url=services.base_url
    )
    with pytest.raises(ProxyServiceError, match=f"HTTP {status}") as caught:
        await provider.load()
    assert caught.value.status == status
    assert api_key not in str(caught.value)
    assert_no_secret(str(caught.value))


async def test_unreachable_service_is_a_clear_error() -> None:
    provider = ProxyProviderFromProxyscrape(base_url=closed_port_url())
    with pytest.raises(ProxyServiceError, match="no response"):
        await provider.load()


async def test_proxyscrape_keeps_http_proxies_by_country(services: FakeProxyServices) -> None:
    provider = ProxyProviderFromProxyscrape(base_url=services.base_url, timeout_ms=5000)
    await provider.load()
    await provider.load()
    assert len(services.requests) == 1
    assert "country=all" in services.requests[0] and "timeout=5000" in services.requests[0]
    assert provider.proxies == {
        "*": [
            "http://10.2.0.1:80",
            "http://10.2.0.2:8080",
            "https://10.2.0.3:443",
            "http://10.2.0.5:3128",
        ],
        "US": ["http://10.2.0.1:80", "https://10.2.0.3:443"],
        "FR": ["http://10.2.0.2:8080"],
    }
