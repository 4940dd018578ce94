"""Proxy pools: rotation, country fallback, scores, cooldown, checks, and the three services."""

import logging
import time
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from scrapeflow_dagster.engine.errors import ErrorKind
from scrapeflow_dagster.engine.proxies import (
    ProxyHealth,
    ProxyProvider,
    ProxyProviderFromDict,
    ProxyProviderFromIPRoyal,
    ProxyProviderFromList,
    ProxyProviderFromProxyscrape,
    ProxyProviderFromWebshare,
    ProxyServiceError,
)
from scrapeflow_dagster_tests.fakes.forward_proxy import ForwardProxy, closed_port_url
from scrapeflow_dagster_tests.fakes.proxy_services import (
    IPROYAL_KEY,
    IPROYAL_ORDER_ID,
    PROXY_PASSWORD,
    WEBSHARE_KEY,
    FakeProxyServices,
)

SECRETS = (WEBSHARE_KEY, IPROYAL_KEY, PROXY_PASSWORD, "s3cr3t-pw")


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def assert_no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


@pytest.fixture
async def services() -> AsyncIterator[FakeProxyServices]:
    async with FakeProxyServices() as fake:
        yield fake


@pytest.fixture
async def target() -> AsyncIterator[str]:
    """A local site: `/generate_204` like gstatic's, `/echo` returns the request body."""

    async def generate_204(request: web.Request) -> web.Response:
        return web.Response(status=204)

    async def echo(request: web.Request) -> web.Response:
        body = await request.read()
        return web.Response(body=body, headers={"X-Method": request.method})

    app = web.Application()
    app.router.add_get("/generate_204", generate_204)
    app.router.add_route("*", "/echo", echo)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


# --- rotation, fallback, scores -------------------------------------------------------------


def test_list_provider_keeps_proxies_under_empty_country() -> None:
    provider = ProxyProviderFromList(["http://10.0.0.1:80", "10.0.0.2:8080"])
    assert provider.proxies == {"": ["http://10.0.0.1:80", "http://10.0.0.2:8080"]}
    assert provider.bad_proxies == set()
    assert ProxyProvider.default_retries == 5


def test_get_one_proxy_rotates_round_robin() -> None:
    proxies = ["http://10.0.0.1:80", "http://10.0.0.2:80", "http://10.0.0.3:80"]
    provider = ProxyProviderFromList(proxies)
    assert [provider.get_one_proxy() for _ in range(6)] == proxies + proxies


def test_country_falls_back_to_star_then_empty() -> None:
    provider = ProxyProviderFromDict(
        {"US": ["http://us:1"], "*": ["http://star:1"], "": ["http://none:1"]}
    )
    assert provider.get_one_proxy("US") == "http://us:1"
    assert provider.get_one_proxy("FR") == "http://star:1"
    assert provider.get_one_proxy() == "http://star:1"
    del provider.proxies["*"]
    assert provider.get_one_proxy("FR") == "http://none:1"
    assert provider.get_one_proxy(None) == "http://none:1"


def test_country_with_every_proxy_benched_falls_back() -> None:
    provider = ProxyProviderFromDict({"US": ["http://us:1"], "*": ["http://star:1"]})
    provider.bad_proxies.add("http://us:1")
    assert provider.get_one_proxy("US") == "http://star:1"


def test_no_country_without_default_lists_uses_any_proxy() -> None:
    provider = ProxyProviderFromDict({"US": ["http://us:1"], "DE": ["http://de:1"]})
    assert {provider.get_one_proxy(), provider.get_one_proxy()} == {"http://us:1", "http://de:1"}
    assert provider.get_one_proxy("FR") is None


def test_empty_provider_has_no_proxy() -> None:
    assert ProxyProvider().get_one_proxy() is None
    assert ProxyProvider().get_one_proxy("US") is None


def test_proxy_is_benched_at_threshold_and_skipped() -> None:
    provider = ProxyProviderFromList(["http://a:1", "http://b:1"], error_threshold=3.0)
    provider.report_failure("http://a:1", ErrorKind.PROXY)
    provider.report_failure("http://a:1", ErrorKind.BLOCKED)
    assert provider.bad_proxies == set()
    provider.report_failure("http://a:1", ErrorKind.PROXY)
    assert provider.bad_proxies == {"http://a:1"}
    assert [provider.get_one_proxy() for _ in range(3)] == ["http://b:1"] * 3
    provider.report_failure("http://b:1", ErrorKind.PROXY)
    provider.report_failure("http://b:1", ErrorKind.PROXY)
    provider.report_failure("http://b:1", ErrorKind.PROXY)
    assert provider.get_one_proxy() is None


def test_failure_kinds_weigh_differently() -> None:
    provider = ProxyProviderFromList(["http://a:1"], error_threshold=3.0)
    for _ in range(20):
        provider.report_failure("http://a:1", ErrorKind.PERMANENT)
    assert provider.bad_proxies == set()
    for _ in range(11):
        provider.report_failure("http://a:1", ErrorKind.TRANSIENT)
    assert provider.bad_proxies == set()
    assert provider.health()["a:1"].score == pytest.approx(2.75)
    provider.report_failure("http://a:1", ErrorKind.TRANSIENT)
    assert provider.bad_proxies == {"http://a:1"}


def test_success_halves_the_score() -> None:
    provider = ProxyProviderFromList(["http://a:1"])
    provider.report_failure("http://a:1", ErrorKind.PROXY)
    provider.report_failure("http://a:1", ErrorKind.PROXY)
    provider.report_success("http://a:1")
    health = provider.health()["a:1"]
    assert health == ProxyHealth(
        score=1.0, benched=False, benched_until=None, failures=2, successes=1
    )


def test_benched_proxy_comes_back_half_open_after_cooldown() -> None:
    clock = FakeClock()
    provider = ProxyProviderFromList(
        ["http://a:1"], error_threshold=3.0, cooldown_seconds=300.0, clock=clock
    )
    for _ in range(3):
        provider.report_failure("http://a:1", ErrorKind.PROXY)
    assert provider.health()["a:1"].benched_until == 1300.0
    clock.now += 299.9
    assert provider.get_one_proxy() is None
    clock.now += 0.1
    assert provider.get_one_proxy() == "http://a:1"
    assert provider.bad_proxies == set()
    assert provider.health()["a:1"].score == pytest.approx(2.75)
    # Half-open: a single failure of any charged kind benches it again.
    provider.report_failure("http://a:1", ErrorKind.TRANSIENT)
    assert provider.bad_proxies == {"http://a:1"}
    assert provider.get_one_proxy() is None
    clock.now += 300.0
    provider.report_success("http://a:1")
    provider.report_failure("http://a:1", ErrorKind.TRANSIENT)
    assert provider.get_one_proxy() == "http://a:1"


def test_state_is_per_instance() -> None:
    first = ProxyProviderFromList(["http://a:1"])
    second = ProxyProviderFromList(["http://a:1"])
    for _ in range(3):
        first.report_failure("http://a:1", ErrorKind.PROXY)
    assert first.bad_proxies == {"http://a:1"}
    assert second.bad_proxies == set()
    assert second.get_one_proxy() == "http://a:1"
    assert ProxyProvider().proxies is not ProxyProvider().proxies
    assert ProxyProvider().bad_proxies is not ProxyProvider().bad_proxies


def test_health_is_keyed_by_host_port_without_credentials() -> None:
    provider = ProxyProviderFromList(
        ["http://alice:s3cr3t-pw@gw:8000", "http://bob:s3cr3t-pw@gw:8000", "http://c:1"]
    )
    provider.report_failure("http://alice:s3cr3t-pw@gw:8000", ErrorKind.PROXY)
    health = provider.health()
    assert list(health) == ["gw:8000", "gw:8000#2", "c:1"]
    assert health["gw:8000"].failures == 1
    assert_no_secret(repr(health))
    assert "alice" not in repr(health)


def test_invalid_settings_are_rejected() -> None:
    with pytest.raises(ValueError, match="error_threshold"):
        ProxyProvider(error_threshold=0)
    with pytest.raises(ValueError, match="cooldown_seconds"):
        ProxyProvider(cooldown_seconds=-1)


# --- the forward proxy fake and check_proxies ------------------------------------------------


async def test_forward_proxy_forwards_get_and_post(target: str) -> None:
    async with ForwardProxy(username="u", password="s3cr3t-pw") as proxy:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{target}/generate_204", proxy=proxy.url) as response:
                assert response.status == 204
            async with session.post(f"{target}/echo", data=b"hello", proxy=proxy.url) as response:
                assert response.status == 200
                assert response.headers["X-Method"] == "POST"
                assert await response.read() == b"hello"
            wrong = proxy.url.replace("s3cr3t-pw", "nope")
            async with session.get(f"{target}/generate_204", proxy=wrong) as response:
                assert response.status == 407
    assert proxy.forwarded == [f"{target}/generate_204", f"{target}/echo"]


async def test_check_proxies_benches_dead_proxies(target: str) -> None:
    async with (
        ForwardProxy() as live,
        ForwardProxy(username="u", password="s3cr3t-pw") as live_with_auth,
        ForwardProxy(mode="close") as closing,
    ):
        dead = closed_port_url()
        wrong_auth = live_with_auth.url.replace("s3cr3t-pw", "nope")
        provider = ProxyProviderFromList(
            [live.url, live_with_auth.url, dead, closing.url, wrong_auth],
            check_url=f"{target}/generate_204",
        )
        await provider.check_proxies(timeout=2, retries=2)
    assert provider.bad_proxies == {dead, closing.url, wrong_auth}
    assert live.forwarded == [f"{target}/generate_204"]
    assert closing.connections >= 2  # every try was made
    assert {provider.get_one_proxy() for _ in range(4)} == {live.url, live_with_auth.url}
    health = provider.health()
    assert health[f"127.0.0.1:{live.port}"].successes == 1
    assert health[f"127.0.0.1:{closing.port}"].benched


async def test_a_passing_check_takes_a_proxy_off_the_bench(target: str) -> None:
    async with ForwardProxy() as live:
        provider = ProxyProviderFromList([live.url], check_url=f"{target}/generate_204")
        for _ in range(3):
            provider.report_failure(live.url, ErrorKind.PROXY)
        assert provider.get_one_proxy() is None
        await provider.check_proxies(timeout=2, retries=1)
    assert provider.get_one_proxy() == live.url
    assert provider.health()[f"127.0.0.1:{live.port}"].score == 0.0


async def test_check_proxies_honours_the_timeout(target: str) -> None:
    async with ForwardProxy(mode="hang") as hanging, ForwardProxy() as live:
        provider = ProxyProviderFromList(
            [hanging.url, live.url], check_url=f"{target}/generate_204"
        )
        started = time.monotonic()
        await provider.check_proxies(timeout=0.5, retries=2)
        elapsed = time.monotonic() - started
    assert elapsed < 2.0
    assert hanging.connections >= 1
    assert provider.bad_proxies == {hanging.url}


async def test_check_proxies_logs_no_credentials(
    target: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="scrapeflow_dagster.engine")
    async with ForwardProxy(username="u", password="right") as proxy:
        bad = proxy.url.replace("right", "s3cr3t-pw")
        provider = ProxyProviderFromList([bad], check_url=f"{target}/generate_204")
        await provider.check_proxies(timeout=2, retries=1)
    assert provider.bad_proxies == {bad}
    assert caplog.records
    assert_no_secret(caplog.text)
    assert_no_secret(repr(provider))


# --- services --------------------------------------------------------------------------------


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


async def test_check_proxies_loads_the_list_first(target: str) -> None:
    async with ForwardProxy() as live:
        dead = closed_port_url()
        listed: list[dict[str, object]] = [
            {"proxy": live.url, "protocol": "http", "ip_data": {"countryCode": "US"}},
            {"proxy": dead, "protocol": "http", "ip_data": {"countryCode": "US"}},
        ]
        async with FakeProxyServices(proxyscrape_proxies=listed) as services:
            provider = ProxyProviderFromProxyscrape(
                base_url=services.base_url, check_url=f"{target}/generate_204"
            )
            await provider.check_proxies(timeout=2, retries=1)
    assert provider.bad_proxies == {dead}
    assert [provider.get_one_proxy("US") for _ in range(2)] == [live.url, live.url]
