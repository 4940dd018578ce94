"""The `scrape` executors against the local site: retries, classification, proxies, limits.

Also the executors after `scrape` (`validation`, `pages`) and the retry decision functions.
"""

import dataclasses
import json
import random
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from scrapeflow_dagster.engine.errors import BlockedError, ErrorKind
from scrapeflow_dagster.engine.executor import Context, Executor, ExecutorOutput, execute_async
from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.validation import check_page, validation
from scrapeflow_dagster.engine.proxies import ProxyProvider, ProxyProviderFromList
from scrapeflow_dagster.engine.retry.requests import backoff_seconds, parse_retry_after, status_kind
from scrapeflow_dagster.engine.scrape import ResponseCallback, scrape, scrape_with_validation
from scrapeflow_dagster.engine.settings import RetryPolicy, ScrapeSettings
from scrapeflow_dagster.engine.status import StatusData, load_status
from scrapeflow_dagster.site.app import FaultRates, fault_of
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.conftest import fast_settings
from scrapeflow_dagster_tests.fakes.forward_proxy import ForwardProxy, closed_port_url

BAD_HEADERS = "params['headers'] must be an object mapping names to strings"


async def scrape_one(
    directory: Path,
    url: str,
    *,
    settings: ScrapeSettings,
    executors: list[Executor] | None = None,
    proxy_provider: ProxyProvider | None = None,
    **params: Any,
) -> StatusData:
    """Run the chain (default: `scrape`) for one task `t` and return its status file."""
    await execute_async(
        executors or [scrape],
        directory,
        {"t": {"url": url, **params}},
        settings=settings,
        proxy_provider=proxy_provider,
    )
    status = load_status(directory, "t")
    assert status is not None
    return status


def scrape_with_validation_executor(callback: ResponseCallback) -> Executor:
    """An executor named like `callback` that scrapes and validates with it (README form)."""

    async def executor(context: Context, status: StatusData) -> ExecutorOutput:
        return await scrape_with_validation(context, status, callback)

    executor.__name__ = callback.__name__
    return executor


async def flaky_requests(site: LocalSite, name: str) -> int:
    """How many requests the site got for `/flaky/{name}`."""
    async with (
        aiohttp.ClientSession() as session,
        session.get(site.url(f"/control/flaky/{name}")) as response,
    ):
        state = await response.json()
    return int(state["requests"])


# Retries and classification, no proxy.


async def test_503_then_success_is_retried(
    site: LocalSite, tmp_path: Path, settings: ScrapeSettings
) -> None:
    status = await scrape_one(tmp_path, site.url("/flaky/a?fail=1"), settings=settings)

    assert status["scrape_status"] == "SUCCESS"
    assert status["scrape_attempts"] == 2
    assert status["scrape"]["attempts"] == 2
    assert await flaky_requests(site, "a") == 2


async def test_429_then_success_is_retried(
    site: LocalSite, tmp_path: Path, settings: ScrapeSettings
) -> None:
    status = await scrape_one(tmp_path, site.url("/flaky/b?fail=2&code=429"), settings=settings)

    assert status["scrape_status"] == "SUCCESS"
    assert status["scrape_attempts"] == 3


async def test_retry_after_is_honoured(site: LocalSite, tmp_path: Path) -> None:
    settings = fast_settings(max_attempts=2)
    started = time.monotonic()

    status = await scrape_one(tmp_path, site.url("/retry-after/1"), settings=settings)

    assert time.monotonic() - started >= 1.0
    assert status["scrape_status"] == "ERROR HttpStatusError::HTTP response 429"
    assert status["scrape_attempts"] == 2
    assert status["scrape_error_kind"] == "transient"


async def test_retry_after_is_capped(site: LocalSite, tmp_path: Path) -> None:
    settings = fast_settings(max_attempts=2, retry_after_max_seconds=0.3)
    started = time.monotonic()

    status = await scrape_one(tmp_path, site.url("/retry-after/3600"), settings=settings)

    assert 0.3 <= time.monotonic() - started < 5
    assert status["scrape_attempts"] == 2


async def test_permanent_404_is_not_retried(
    site: LocalSite, tmp_path: Path, settings: ScrapeSettings
) -> None:
    status = await scrape_one(tmp_path, site.url("/flaky/c?fail=-1&code=404"), settings=settings)

    assert status["scrape_status"] == "ERROR HttpStatusError::HTTP response 404"
    assert status["scrape_attempts"] == 1
    assert status["scrape_error_kind"] == "permanent"
    assert await flaky_requests(site, "c") == 1
    assert not (tmp_path / "t.scrape").exists()


@pytest.mark.parametrize(
    ("path", "cause"),
    [("/reset", ("ClientOSError", "ServerDisconnectedError")), ("/truncated", ("ClientPayload",))],
)
async def test_reset_and_truncated_are_transient_and_retried(
    site: LocalSite, tmp_path: Path, path: str, cause: tuple[str, ...]
) -> None:
    settings = fast_settings(max_attempts=3)

    status = await scrape_one(tmp_path, site.url(path), settings=settings)

    assert status["scrape_status"].startswith("ERROR TransientError::")
    assert any(name in status["scrape_status"] for name in cause)
    assert status["scrape_attempts"] == 3
    assert status["scrape_error_kind"] == "transient"


@pytest.mark.parametrize("fault", ["server_error", "reset", "truncated", "too_many"])
async def test_transient_faults_then_the_page(tmp_path: Path, fault: str) -> None:
    rates = FaultRates(retry_after_seconds=0)
    n = next(n for n in range(1000) if fault_of(n, 0, rates) == fault)
    async with LocalSite(pages=1000, page_bytes=2000, fault_rates=rates) as site:
        status = await scrape_one(tmp_path, site.url(f"/mixed/{n}"), settings=fast_settings())

    assert status["scrape_status"] == "SUCCESS"
    assert f"<title>Page {n}</title>".encode() in (tmp_path / "t.scrape").read_bytes()


async def test_slow_page_times_out_as_transient(site: LocalSite, tmp_path: Path) -> None:
    settings = dataclasses.replace(fast_settings(max_attempts=2), request_timeout_seconds=0.2)
    started = time.monotonic()

    status = await scrape_one(tmp_path, site.url("/slow/3"), settings=settings)

    assert time.monotonic() - started < 2.5
    assert status["scrape_status"] == "ERROR TransientError::TimeoutError: request timed out"
    assert status["scrape_attempts"] == 2
    assert status["scrape_error_kind"] == "transient"


async def test_block_code_without_proxy_is_not_retried(
    site: LocalSite, tmp_path: Path, settings: ScrapeSettings
) -> None:
    status = await scrape_one(tmp_path, site.url("/flaky/d?fail=-1&code=403"), settings=settings)

    assert status["scrape_status"] == "ERROR HttpStatusError::HTTP response 403"
    assert status["scrape_error_kind"] == "blocked"
    assert status["scrape_attempts"] == 1
    assert await flaky_requests(site, "d") == 1


async def test_redirect_is_followed(
    site: LocalSite, tmp_path: Path, settings: ScrapeSettings
) -> None:
    status = await scrape_one(tmp_path, site.url("/redirect/3"), settings=settings)

    assert status["scrape_status"] == "SUCCESS"
    assert status["scrape"]["final_url"] == site.url("/page/3")
    assert status["scrape"]["http_status"] == 200
    assert b"<title>Page 3</title>" in (tmp_path / "t.scrape").read_bytes()


async def test_redirect_loop_is_permanent(
    site: LocalSite, tmp_path: Path, settings: ScrapeSettings
) -> None:
    status = await scrape_one(tmp_path, site.url("/redirect-loop"), settings=settings)

    assert status["scrape_status"].startswith("ERROR TooManyRedirectsError::more than 10 redirects")
    assert status["scrape_error_kind"] == "permanent"
    assert status["scrape_attempts"] == 1


async def test_body_over_the_cap_fails_with_a_clear_message(
    site: LocalSite, tmp_path: Path
) -> None:
    settings = dataclasses.replace(fast_settings(), max_body_bytes=1000)

    status = await scrape_one(tmp_path, site.url("/big/5000"), settings=settings)

    assert status["scrape_status"] == (
        "ERROR BodyTooLargeError::body of 5000 bytes is over the cap of 1000 bytes"
    )
    assert status["scrape_error_kind"] == "permanent"
    assert status["scrape_attempts"] == 1
    assert not (tmp_path / "t.scrape").exists()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://127.0.0.1/x", "only http and https"),
        ("/page/1", "only http and https"),
        ("file:///etc/passwd", "only http and https"),
    ],
)
async def test_unfetchable_url_is_a_recorded_error(
    tmp_path: Path, settings: ScrapeSettings, url: str, message: str
) -> None:
    status = await scrape_one(tmp_path, url, settings=settings)

    assert status["scrape_status"].startswith("ERROR ScrapeError::")
    assert message in status["scrape_status"]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"headers": 5}, BAD_HEADERS),
        ({"headers": ["Referer"]}, BAD_HEADERS),
        ({"headers": {"Authorization": 5}}, BAD_HEADERS),
        ({"cookies": "a=b"}, "params['cookies'] must be an object"),
    ],
)
async def test_malformed_params_fail_their_task_not_the_run(
    site: LocalSite, tmp_path: Path, settings: ScrapeSettings, params: dict[str, Any], message: str
) -> None:
    tasks = {"bad": {"url": site.url("/echo"), **params}, "good": {"url": site.url("/page/1")}}

    done = await execute_async([scrape], tmp_path, tasks, settings=settings)

    assert done == ["good"]
    bad = load_status(tmp_path, "bad")
    assert bad is not None
    assert bad["scrape_status"] == f"ERROR ScrapeError::{message}"


async def test_post_payload_cookies_and_headers_are_sent(
    site: LocalSite, tmp_path: Path, settings: ScrapeSettings
) -> None:
    payload = {"query": "shoes", "page": 2}

    await scrape_one(
        tmp_path,
        site.url("/echo?x=1"),
        settings=settings,
        post_payload=payload,
        cookies={"session": "abc"},
        headers={"Referer": "http://ref.test/"},
    )

    echo = json.loads((tmp_path / "t.scrape").read_bytes())
    assert echo["method"] == "POST"
    assert echo["json"] == payload
    assert echo["query"] == {"x": "1"}
    assert echo["cookies"] == {"session": "abc"}
    assert echo["headers"]["Referer"] == "http://ref.test/"
    assert echo["headers"]["Content-Type"] == "application/json"
    assert echo["headers"]["User-Agent"] == settings.user_agent


async def test_the_user_agent_names_this_project_and_is_a_setting(
    site: LocalSite, tmp_path: Path
) -> None:
    default = ScrapeSettings().user_agent
    assert (
        default.startswith("scrapeflow-dagster/")
        and "pypi.org/project/scrapeflow-dagster" in default
    )
    own = dataclasses.replace(fast_settings(), user_agent="acme-crawler/2 (+https://acme.test/bot)")

    await scrape_one(tmp_path, site.url("/echo"), settings=own)

    echo = json.loads((tmp_path / "t.scrape").read_bytes())
    assert echo["headers"]["User-Agent"] == "acme-crawler/2 (+https://acme.test/bot)"


async def test_get_without_payload(
    site: LocalSite, tmp_path: Path, settings: ScrapeSettings
) -> None:
    await scrape_one(tmp_path, site.url("/echo"), settings=settings)

    echo = json.loads((tmp_path / "t.scrape").read_bytes())
    assert echo["method"] == "GET"
    assert echo["json"] is None
    assert echo["cookies"] == {}


async def test_cookies_do_not_leak_between_tasks(
    site: LocalSite, tmp_path: Path, settings: ScrapeSettings
) -> None:
    tasks = {"first": {"url": site.url("/set-cookie?sid=1")}, "second": {"url": site.url("/echo")}}

    await execute_async([scrape], tmp_path, tasks, settings=settings, max_parallelism=1)

    assert json.loads((tmp_path / "second.scrape").read_bytes())["cookies"] == {}


# Proxies: a separate budget, benching, never going direct.


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


# The executors after scrape.


async def test_captcha_page_fails_validation_and_stops_the_chain(
    site: LocalSite, tmp_path: Path, settings: ScrapeSettings
) -> None:
    status = await scrape_one(
        tmp_path, site.url("/captcha"), settings=settings, executors=[scrape, validation, pages]
    )

    assert status["scrape_status"] == "SUCCESS"
    assert status["validation_status"].startswith("ERROR BlockedError::block page: found")
    assert status["validation_error_kind"] == "blocked"
    assert "pages_status" not in status


async def test_normal_page_is_validated_and_parsed(
    site: LocalSite, tmp_path: Path, settings: ScrapeSettings
) -> None:
    status = await scrape_one(
        tmp_path, site.url("/redirect/3"), settings=settings, executors=[scrape, validation, pages]
    )

    assert status["validation_status"] == "SUCCESS"
    assert status["validation"]["verdict"] == "ok"
    parsed = status["pages"]
    assert parsed["title"] == "Page 3"
    assert parsed["link_count"] == 10
    assert parsed["links"][0] == site.url("/page/4")  # absolute, against the final URL
    assert all(link.startswith(site.url("/page/")) for link in parsed["links"])
    assert parsed["text_bytes"] > 0


async def test_validation_without_a_stored_body_is_a_recorded_error(
    tmp_path: Path, settings: ScrapeSettings
) -> None:
    status = await scrape_one(
        tmp_path, "http://127.0.0.1/", settings=settings, executors=[validation]
    )

    assert status["validation_status"] == (
        "ERROR ScrapeError::no stored body for task 't': run scrape first"
    )


@pytest.mark.parametrize(
    "body", [b"", b"<html>tiny</html>", b"<html>" + b"x" * 100 + b" unusual traffic</html>"]
)
def test_check_page_rejects_tiny_and_block_pages(body: bytes) -> None:
    with pytest.raises(BlockedError):
        check_page(body)


# The retry decision functions.


def test_backoff_grows_exponentially_with_jitter_within_bounds() -> None:
    policy = RetryPolicy(backoff_base_seconds=0.5, backoff_max_seconds=10.0)
    rng = random.Random(7)
    for failures in range(1, 10):
        ceiling = min(10.0, 0.5 * 2 ** (failures - 1))
        delays = [backoff_seconds(failures, policy, rng=rng) for _ in range(200)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(set(delays)) > 100  # jittered, not synchronised
    assert backoff_seconds(4, policy, rng=random.Random(1)) > backoff_seconds(
        1, policy, rng=random.Random(1)
    )


def test_backoff_honours_retry_after_up_to_the_cap() -> None:
    policy = RetryPolicy(backoff_base_seconds=0.01, retry_after_max_seconds=30.0)
    assert backoff_seconds(1, policy, retry_after_seconds=7) == 7
    assert backoff_seconds(1, policy, retry_after_seconds=3600) == 30
    assert backoff_seconds(1, policy, retry_after_seconds=0) <= 0.01


def test_parse_retry_after() -> None:
    now = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after(" 5 ") == 5.0
    assert parse_retry_after(
        format_datetime(now + timedelta(seconds=30), usegmt=True), now=now
    ) == (30.0)
    assert parse_retry_after(format_datetime(now - timedelta(hours=1), usegmt=True), now=now) == 0
    for value in (None, "", "soon", "-5", "1.5"):
        assert parse_retry_after(value) is None


@pytest.mark.parametrize(
    ("status", "via_proxy", "kind"),
    [
        (200, False, None),
        (404, False, ErrorKind.PERMANENT),
        (410, False, ErrorKind.PERMANENT),
        (403, False, ErrorKind.BLOCKED),
        (407, True, ErrorKind.PROXY),
        (407, False, ErrorKind.PERMANENT),
        (408, False, ErrorKind.TRANSIENT),
        (429, False, ErrorKind.TRANSIENT),
        (500, False, ErrorKind.TRANSIENT),
        (503, True, ErrorKind.TRANSIENT),
        (204, False, ErrorKind.PERMANENT),  # scrapeflow: any final status but 200 is an error
    ],
)
def test_status_kind(status: int, via_proxy: bool, kind: ErrorKind | None) -> None:
    assert status_kind(status, RetryPolicy(), via_proxy=via_proxy) == kind
