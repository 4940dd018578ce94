"""The `scrape` executor through proxies: a separate budget, benching, never going direct."""

from pathlib import Path

from scrapeflow_dagster.engine.executor import Context, Executor, ExecutorOutput
from scrapeflow_dagster.engine.executors.validation import check_page
from scrapeflow_dagster.engine.proxies import ProxyProviderFromList
from scrapeflow_dagster.engine.scrape import ResponseCallback, scrape_with_validation
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.status import StatusData
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.conftest import fast_settings
from scrapeflow_dagster_tests.engine.executors.helpers import flaky_requests, scrape_one
from scrapeflow_dagster_tests.fakes.forward_proxy import ForwardProxy, closed_port_url


def scrape_with_validation_executor(callback: ResponseCallback) -> Executor:
    """An executor named like `callback` that scrapes and validates with it (README form)."""

    async def executor(context: Context, status: StatusData) -> ExecutorOutput:
        return await scrape_with_validation(context, status, callback)

    executor.__name__ = callback.__name__
    return executor


async def test_dead_proxy_is_benched_and_the_site_is_never_asked_directly(
    site: LocalSite, tmp_path: Path, settings: ScrapeSettings
) -> None:
    dead = closed_port_url()
    provider = ProxyProviderFromList([dead])

    status = await scrape_one(
        tmp_path, site.url("/flaky/e?fail=0"), settings=settings, proxy_provider=provider
    )

    assert status["scrape_status"].startswith("ERROR ProxyError::")
    assert status["scrape_error_kind"] == "proxy"
    # 3 failures bench it (threshold 3); the 4th try finds no healthy proxy and gives up.
    assert status["scrape_attempts"] == 4
    assert provider.bad_proxies == {dead}
    assert provider.health()[dead.removeprefix("http://")].benched
    assert await flaky_requests(site, "e") == 0


async def test_proxy_budget_is_separate_from_the_target_budget(
    site: LocalSite, tmp_path: Path
) -> None:
    settings = fast_settings(max_attempts=3, max_proxy_attempts=3)
    async with ForwardProxy() as good:
        dead = closed_port_url()
        # Round robin: dead, good, dead, good... and the dead one is never benched here.
        provider = ProxyProviderFromList([dead, good.url], error_threshold=100)

        status = await scrape_one(
            tmp_path, site.url("/flaky/f?fail=2"), settings=settings, proxy_provider=provider
        )

    # 3 proxy failures and 2 target failures: more than either budget alone allows.
    assert status["scrape_status"] == "SUCCESS"
    assert status["scrape_attempts"] == 6
    assert status["scrape"]["proxy"] == good.url.removeprefix("http://")
    # robots.txt went through the good proxy too, once, before the page.
    assert good.forwarded[0] == site.url("/robots.txt")
    assert len(pages_forwarded(good)) == 3
    assert await flaky_requests(site, "f") == 3


async def test_proxy_budget_runs_out(site: LocalSite, tmp_path: Path) -> None:
    settings = fast_settings(max_proxy_attempts=2)
    dead = closed_port_url()
    provider = ProxyProviderFromList([dead], error_threshold=100)

    status = await scrape_one(
        tmp_path, site.url("/flaky/g?fail=0"), settings=settings, proxy_provider=provider
    )

    assert status["scrape_status"].startswith("ERROR ProxyError::ClientProxyConnectionError")
    assert status["scrape_attempts"] == 3
    assert status["scrape_proxy"] == dead.removeprefix("http://")
    assert await flaky_requests(site, "g") == 0


async def test_target_budget_runs_out_through_a_good_proxy(site: LocalSite, tmp_path: Path) -> None:
    settings = fast_settings(max_attempts=3)
    async with ForwardProxy() as good:
        provider = ProxyProviderFromList([good.url])
        status = await scrape_one(
            tmp_path, site.url("/flaky/h?fail=-1"), settings=settings, proxy_provider=provider
        )

    assert status["scrape_status"] == "ERROR HttpStatusError::HTTP response 503"
    assert status["scrape_attempts"] == 3
    assert provider.bad_proxies == set()  # the target's fault, not the proxy's


async def test_block_through_a_proxy_is_retried_through_another(
    site: LocalSite, tmp_path: Path, settings: ScrapeSettings
) -> None:
    async with ForwardProxy() as one, ForwardProxy() as two:
        provider = ProxyProviderFromList([one.url, two.url])
        status = await scrape_one(
            tmp_path,
            site.url("/flaky/i?fail=1&code=403"),
            settings=settings,
            proxy_provider=provider,
        )

    assert status["scrape_status"] == "SUCCESS"
    assert status["scrape_attempts"] == 2
    assert (len(pages_forwarded(one)), len(pages_forwarded(two))) == (1, 1)
    assert (one.forwarded + two.forwarded).count(site.url("/robots.txt")) == 1
    assert provider.health()[one.url.removeprefix("http://")].failures == 1


async def test_captcha_through_proxies_uses_the_proxy_budget(
    site: LocalSite, tmp_path: Path
) -> None:
    settings = fast_settings(max_proxy_attempts=2)

    @scrape_with_validation_executor
    def no_captcha(body: bytes) -> None:
        check_page(body)

    async with ForwardProxy() as one, ForwardProxy() as two:
        provider = ProxyProviderFromList([one.url, two.url])
        status = await scrape_one(
            tmp_path,
            site.url("/captcha"),
            settings=settings,
            proxy_provider=provider,
            executors=[no_captcha],
        )

    assert status["no_captcha_status"].startswith("ERROR BlockedError::block page")
    assert status["no_captcha_error_kind"] == "blocked"
    assert status["no_captcha_attempts"] == 3
    assert len(pages_forwarded(one)) + len(pages_forwarded(two)) == 3


def pages_forwarded(proxy: ForwardProxy) -> list[str]:
    """What `proxy` fetched for the task, robots.txt (read once per run) left out."""
    return [url for url in proxy.forwarded if not url.endswith("/robots.txt")]
