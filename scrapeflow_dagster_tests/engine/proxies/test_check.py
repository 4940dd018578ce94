"""The forward proxy fake, and `check_proxies` benching the proxies that never answer."""

import asyncio
import logging

import aiohttp
import pytest

from scrapeflow_dagster.engine.errors import ErrorKind
from scrapeflow_dagster.engine.proxies import ProxyProviderFromList, ProxyProviderFromProxyscrape
from scrapeflow_dagster_tests.engine.proxies.helpers import assert_no_secret
from scrapeflow_dagster_tests.fakes.forward_proxy import ForwardProxy, closed_port_url
from scrapeflow_dagster_tests.fakes.proxy_services import FakeProxyServices


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
        # The hanging proxy never answers: without the per-try timeout this never returns
        # (the outer bound turns that into a failure instead of a stuck test).
        await asyncio.wait_for(provider.check_proxies(timeout=0.5, retries=2), 60)
    # Each try timed out and the next one was made: as many connections as tries, no more.
    assert hanging.connections == 2
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
