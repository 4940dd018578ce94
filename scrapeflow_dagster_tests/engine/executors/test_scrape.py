"""The `scrape` executor against the local site, no proxy: retries and classification.

Its request options are in `test_scrape_requests.py`, its proxies in `test_scrape_proxies.py`.
"""

import dataclasses
import time
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.site.app import FaultRates, fault_of
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.conftest import fast_settings
from scrapeflow_dagster_tests.engine.executors.helpers import flaky_requests, scrape_one

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
