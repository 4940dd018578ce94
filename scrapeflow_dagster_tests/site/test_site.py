"""The local test website, served for real on a free port and fetched with a real aiohttp client."""

import asyncio
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from scrapeflow_dagster.site.app import (
    CAPTCHA_HTML,
    FAULT_KINDS,
    SERVER_ERROR_STATUS,
    FaultRates,
    build_site,
    fault_of,
    page_links,
)
from scrapeflow_dagster.site.server import LocalSite, SiteThread

PAGES = 2000
PAGE_BYTES = 5000
SEED = 7
RATES = FaultRates(slow_seconds=0.3, retry_after_seconds=2)


@pytest.fixture
async def site() -> AsyncIterator[LocalSite]:
    async with LocalSite(pages=PAGES, page_bytes=PAGE_BYTES, seed=SEED, fault_rates=RATES) as s:
        yield s


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as s:
        yield s


async def get(session: aiohttp.ClientSession, url: str) -> tuple[int, str]:
    async with session.get(url) as response:
        return response.status, await response.text()


def first_with_fault(kind: str) -> int:
    return next(n for n in range(PAGES) if fault_of(n, SEED, RATES) == kind)


async def test_binds_loopback_on_a_free_port(site: LocalSite) -> None:
    assert site.port > 0
    assert site.base_url == f"http://127.0.0.1:{site.port}"
    assert site.url("health") == site.url("/health") == f"{site.base_url}/health"


async def test_health(site: LocalSite, session: aiohttp.ClientSession) -> None:
    assert await get(session, site.url("/health")) == (200, "ok")


async def test_page_is_html_of_page_bytes_with_predictable_links(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    async with session.get(site.url("/page/42")) as response:
        body = await response.read()
        assert response.status == 200
        assert response.content_type == "text/html"
    assert len(body) == PAGE_BYTES
    text = body.decode()
    assert "<title>Page 42</title>" in text
    links = [int(m) for m in re.findall(r'<a href="/page/(\d+)">', text)]
    assert links == page_links(42, pages=PAGES, seed=SEED)
    assert len(links) == 10 and links[0] == 43 and 42 not in links and len(set(links)) == 10
    assert all(0 <= m < PAGES for m in links)
    assert await get(session, site.url("/page/42")) == (200, text)


async def test_page_out_of_range_is_404(site: LocalSite, session: aiohttp.ClientSession) -> None:
    assert (await get(session, site.url(f"/page/{PAGES}")))[0] == 404


def test_links_depend_on_seed_and_stay_distinct_on_tiny_sites() -> None:
    assert page_links(5, pages=PAGES, seed=1) != page_links(5, pages=PAGES, seed=2)
    assert sorted(page_links(0, pages=4, seed=0)) == [1, 2, 3]
    assert page_links(0, pages=1, seed=0) == []


async def test_sitemap_lists_every_page(site: LocalSite, session: aiohttp.ClientSession) -> None:
    status, text = await get(session, site.url("/sitemap.txt"))
    assert status == 200
    assert text.splitlines() == [site.url(f"/page/{n}") for n in range(PAGES)]


@pytest.mark.parametrize("code", [200, 404, 500, 503])
async def test_status(site: LocalSite, session: aiohttp.ClientSession, code: int) -> None:
    assert await get(session, site.url(f"/status/{code}")) == (code, f"status {code}")


async def test_retry_after_is_429_with_header(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    async with session.get(site.url("/retry-after/7")) as response:
        assert response.status == 429
        assert response.headers["Retry-After"] == "7"


async def test_flaky_fails_k_times_then_serves(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    url = site.url("/flaky/a?fail=2&code=500")
    assert [(await get(session, url))[0] for _ in range(4)] == [500, 500, 200, 200]
    other = site.url("/flaky/b")
    assert [(await get(session, other))[0] for _ in range(2)] == [SERVER_ERROR_STATUS, 200]
    async with session.get(site.url("/control/flaky/a")) as response:
        assert await response.json() == {"name": "a", "fail_left": 0, "requests": 4}


async def test_flaky_control_resets_sets_and_persists(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    url = site.url("/flaky/c?fail=1")
    assert (await get(session, url))[0] == 503
    async with session.post(site.url("/control/flaky/c/reset")) as response:
        assert (await response.json())["requests"] == 0
    assert [(await get(session, url))[0] for _ in range(2)] == [503, 200]
    async with session.post(site.url("/control/flaky/c?fail=-1")) as response:
        assert (await response.json())["fail_left"] == -1
    assert [(await get(session, url))[0] for _ in range(3)] == [503, 503, 503]
    async with session.post(site.url("/control/flaky/c?fail=0")):
        pass
    assert (await get(session, url))[0] == 200
    async with session.post(site.url("/control/flaky/c")) as response:
        assert response.status == 400


async def timed_state(session: aiohttp.ClientSession, site: LocalSite, name: str) -> dict[str, Any]:
    async with session.get(site.url(f"/control/timed/{name}")) as response:
        state: dict[str, Any] = await response.json()
        return state


def unseen_timed(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "requests": 0,
        "seconds_since_first": None,
        "fail_seconds": None,
        "failing": None,
    }


async def test_timed_fails_for_fail_seconds_after_the_first_request_then_serves(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    url = site.url("/timed/t?fail_seconds=0.5&code=500")
    started = time.monotonic()
    assert [(await get(session, url))[0] for _ in range(2)] == [500, 500]
    await asyncio.sleep(0.1)
    # The first request's window counts: a later, shorter fail_seconds does not end it.
    assert (await get(session, site.url("/timed/t?fail_seconds=0")))[0] == 503
    await asyncio.sleep(0.5)
    assert time.monotonic() - started >= 0.5
    assert await get(session, url) == (200, await page_text(session, site, 0))
    # Each name's clock starts at its own first request, not when the site started.
    assert (await get(session, site.url("/timed/u?fail_seconds=0.5")))[0] == 503


async def test_timed_control_counts_requests_and_reset_restarts_the_clock(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    assert await timed_state(session, site, "t") == unseen_timed("t")
    url = site.url("/timed/t?fail_seconds=0.5")
    assert [(await get(session, url))[0] for _ in range(3)] == [503, 503, 503]
    state = await timed_state(session, site, "t")
    assert 0.0 <= state.pop("seconds_since_first") < 0.5
    assert state == {"name": "t", "requests": 3, "fail_seconds": 0.5, "failing": True}
    await asyncio.sleep(0.5)
    state = await timed_state(session, site, "t")
    assert state.pop("seconds_since_first") >= 0.5
    assert state == {"name": "t", "requests": 3, "fail_seconds": 0.5, "failing": False}
    assert (await get(session, url))[0] == 200
    async with session.post(site.url("/control/reset")):
        pass
    assert await timed_state(session, site, "t") == unseen_timed("t")
    assert (await get(session, url))[0] == 503


@pytest.mark.parametrize(
    "query", ["", "?fail_seconds=-1", "?fail_seconds=soon", "?fail_seconds=inf"]
)
async def test_timed_needs_a_number_of_seconds_and_zero_never_fails(
    site: LocalSite, session: aiohttp.ClientSession, query: str
) -> None:
    assert (await get(session, site.url(f"/timed/v{query}")))[0] == 400
    assert await timed_state(session, site, "v") == unseen_timed("v")
    assert (await get(session, site.url("/timed/v?fail_seconds=0")))[0] == 200


async def test_slow_answers_after_the_delay(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    started = time.monotonic()
    assert (await get(session, site.url("/slow/0.2")))[0] == 200
    assert time.monotonic() - started >= 0.2
    with pytest.raises(asyncio.TimeoutError):
        await session.get(site.url("/slow/2"), timeout=aiohttp.ClientTimeout(total=0.05))


async def test_reset_drops_the_connection(site: LocalSite, session: aiohttp.ClientSession) -> None:
    with pytest.raises((aiohttp.ClientOSError, aiohttp.ServerDisconnectedError)):
        await get(session, site.url("/reset"))
    assert (await get(session, site.url("/health")))[0] == 200


async def test_truncated_body_is_a_payload_error(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    async with session.get(site.url("/truncated")) as response:
        assert response.status == 200
        assert response.content_length == PAGE_BYTES
        with pytest.raises(aiohttp.ClientPayloadError):
            await response.read()


async def test_captcha_is_a_200_block_page(site: LocalSite, session: aiohttp.ClientSession) -> None:
    status, text = await get(session, site.url("/captcha"))
    assert status == 200 and "captcha" in text and "I'm not a robot" in text


async def test_redirects(site: LocalSite, session: aiohttp.ClientSession) -> None:
    async with session.get(site.url("/redirect/3")) as response:
        assert str(response.url) == site.url("/page/3")
        assert [r.status for r in response.history] == [302]
    with pytest.raises(aiohttp.TooManyRedirects):
        await session.get(site.url("/redirect-loop"), max_redirects=3)


async def test_big_streams_exactly_nbytes(site: LocalSite, session: aiohttp.ClientSession) -> None:
    async with session.get(site.url("/big/200001")) as response:
        assert response.content_length == 200_001
        assert len(await response.read()) == 200_001


async def test_echo_reports_method_json_cookies_and_user_agent(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    headers = {"User-Agent": "scrapeflow-test"}
    cookies = {"session": "abc"}
    url = site.url("/echo")
    async with session.post(url, json={"q": 1}, headers=headers, cookies=cookies) as response:
        echoed = await response.json()
    assert echoed["method"] == "POST" and echoed["json"] == {"q": 1}
    assert echoed["cookies"] == cookies
    assert echoed["headers"]["User-Agent"] == "scrapeflow-test"
    async with session.get(site.url("/echo?x=1")) as response:
        echoed = await response.json()
    assert echoed["method"] == "GET" and echoed["json"] is None and echoed["query"] == {"x": "1"}


async def test_set_cookie_reaches_the_cookie_jar(
    site: LocalSite,
) -> None:
    # aiohttp's default jar ignores cookies from IP hosts such as 127.0.0.1; unsafe=True keeps them.
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        async with session.get(site.url("/set-cookie?token=t1")):
            pass
        async with session.get(site.url("/echo")) as response:
            assert (await response.json())["cookies"] == {"token": "t1"}


def test_fault_distribution_matches_rates() -> None:
    rates = FaultRates()
    counts = Counter(fault_of(n, 0, rates) for n in range(10_000))
    for kind in FAULT_KINDS:
        expected = getattr(rates, kind) * 10_000
        assert abs(counts[kind] - expected) < 4 * expected**0.5 + 5, (kind, counts)
    assert counts[None] > 6000
    assert all(fault_of(n, 0, FaultRates.none()) is None for n in range(1000))


def test_fault_rates_are_validated() -> None:
    with pytest.raises(ValueError):
        FaultRates(server_error=0.9, reset=0.2)
    with pytest.raises(ValueError):
        FaultRates(slow=-0.1)
    with pytest.raises(ValueError):
        build_site(pages=0)


@pytest.mark.parametrize(
    ("kind", "first_status"),
    [("server_error", 503), ("too_many", 429), ("captcha", 200), ("slow", 200)],
)
async def test_mixed_status_faults_are_transient_unless_sticky(
    site: LocalSite, session: aiohttp.ClientSession, kind: str, first_status: int
) -> None:
    n = first_with_fault(kind)
    status, text = await get(session, site.url(f"/mixed/{n}"))
    assert status == first_status
    if kind == "captcha":
        assert text == CAPTCHA_HTML
    assert await get(session, site.url(f"/mixed/{n}")) == (200, (await page_text(session, site, n)))
    status, _ = await get(session, site.url(f"/mixed/{n}?sticky=1"))
    assert status == first_status


async def page_text(session: aiohttp.ClientSession, site: LocalSite, n: int) -> str:
    return (await get(session, site.url(f"/page/{n}")))[1]


async def test_mixed_too_many_carries_retry_after(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    async with session.get(site.url(f"/mixed/{first_with_fault('too_many')}")) as response:
        assert response.headers["Retry-After"] == "2"


async def test_mixed_slow_fault_sleeps_first(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    url = site.url(f"/mixed/{first_with_fault('slow')}")
    started = time.monotonic()
    await get(session, url)
    assert time.monotonic() - started >= RATES.slow_seconds
    started = time.monotonic()
    await get(session, url)
    assert time.monotonic() - started < RATES.slow_seconds


async def test_mixed_connection_faults_then_page(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    reset_url = site.url(f"/mixed/{first_with_fault('reset')}")
    with pytest.raises((aiohttp.ClientOSError, aiohttp.ServerDisconnectedError)):
        await get(session, reset_url)
    assert (await get(session, reset_url))[0] == 200
    truncated_url = site.url(f"/mixed/{first_with_fault('truncated')}")
    with pytest.raises(aiohttp.ClientPayloadError):
        await get(session, truncated_url)
    assert (await get(session, truncated_url))[0] == 200
    async with session.post(site.url("/control/reset")):
        pass
    with pytest.raises(aiohttp.ClientPayloadError):
        await get(session, truncated_url)


async def test_mixed_healthy_page_matches_page(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    n = next(n for n in range(PAGES) if fault_of(n, SEED, RATES) is None)
    assert await get(session, site.url(f"/mixed/{n}")) == (200, await page_text(session, site, n))


def test_site_thread_serves_sync_code() -> None:
    with SiteThread(pages=10, page_bytes=1000) as site:
        assert site.base_url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(site.url("/page/9"), timeout=5) as response:
            assert b"<title>Page 9</title>" in response.read()
    with pytest.raises(OSError):
        urllib.request.urlopen(site.url("/health"), timeout=1)


def test_run_site_forever_serves_until_sigterm() -> None:
    script = (
        "from scrapeflow_dagster.site.server import run_site_forever\n"
        "run_site_forever(port=0, pages=5, on_ready=lambda url: print(url, flush=True))\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(f"{base_url}/health", timeout=5) as response:
            assert response.read() == b"ok"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=5) == 0
