"""robots.txt against the bundled site: disallowed URLs are never requested nor retried, the file
is read once per origin and cached across runs, Crawl-delay spaces the requests."""

import asyncio
import dataclasses
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web

from scrapeflow_dagster.engine.executor import execute_async
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.retry.between_runs import Decision, RetryRules, decide
from scrapeflow_dagster.engine.run.execute import POLITE_DIR
from scrapeflow_dagster.engine.settings import PoliteSettings, ScrapeSettings
from scrapeflow_dagster.engine.state.files import load_status
from scrapeflow_dagster.engine.state.schema import utc_now
from scrapeflow_dagster.site.crawling.graph import nodes_within_depth
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.conftest import fast_settings


async def requests_seen(site: LocalSite) -> dict[str, Any]:
    """What the site counted: paths, statuses, in flight per Host header."""
    async with (
        aiohttp.ClientSession() as session,
        session.get(site.url("/control/requests")) as response,
    ):
        return dict(await response.json())


def polite(**options: Any) -> ScrapeSettings:
    return dataclasses.replace(fast_settings(), polite=PoliteSettings(**options))


async def run(
    directory: Path, tasks: dict[str, dict[str, Any]] | list[str], **options: Any
) -> list[str]:
    timeout = options.pop("timeout", None)
    parallelism = options.pop("max_parallelism", 20)
    return await execute_async(
        [scrape],
        directory,
        tasks,
        settings=polite(**options),
        timeout=timeout,
        max_parallelism=parallelism,
    )


@pytest.fixture
async def site() -> AsyncIterator[LocalSite]:
    async with LocalSite(pages=20, page_bytes=500) as s:
        yield s


async def test_a_disallowed_url_is_never_requested_and_never_retried(
    site: LocalSite, tmp_path: Path
) -> None:
    tasks = {
        "private": {"url": site.url("/graph/private/3")},
        "public": {"url": site.url("/graph/3")},
    }
    assert await run(tmp_path, tasks) == ["public"]
    status = load_status(tmp_path, "private")
    assert status is not None
    assert status["scrape_status"].startswith(
        "ERROR DisallowedError::robots.txt of http://127.0.0.1"
    )
    assert status["scrape_error_kind"] == "disallowed"
    assert status["scrape_attempts"] == 0
    # The retry sensor's rule gives it up at once, however long ago it failed.
    assert decide(status, "scrape", RetryRules(), utc_now()) == Decision.GIVE_UP

    await run(tmp_path, ["private"])  # a run that asks for it again still sends nothing
    seen = await requests_seen(site)
    assert seen["paths"] == {"/robots.txt": 1, "/graph/3": 1}


async def test_robots_txt_is_read_once_per_origin_and_cached_across_runs(
    site: LocalSite, tmp_path: Path
) -> None:
    graph = {f"g{n}": {"url": site.url(f"/graph/{n}")} for n in nodes_within_depth(3)}
    assert len(await run(tmp_path, graph)) == 40
    assert (await requests_seen(site))["paths"]["/robots.txt"] == 1

    pages = {f"p{n}": {"url": site.url(f"/page/{n}")} for n in range(10)}
    assert len(await run(tmp_path, pages)) == 10  # a new run: the cached copy, no request
    assert (await requests_seen(site))["paths"]["/robots.txt"] == 1
    cache = sorted(p.name for p in (tmp_path / POLITE_DIR / "robots").glob("*.json"))
    assert cache == [f"http-127.0.0.1_{site.port}.json"]
    record = orjson.loads((tmp_path / POLITE_DIR / "robots" / cache[0]).read_bytes())
    assert record["status"] == 200 and "Disallow: /graph/private/" in record["body"]

    # Older than the max age (0 s): the next run reads it again, once.
    again = {f"q{n}": params for n, params in enumerate(pages.values())}
    assert len(await run(tmp_path, again, robots_max_age_seconds=0)) == 10
    assert (await requests_seen(site))["paths"]["/robots.txt"] == 2
    # Another origin (same server, another Host): its own robots.txt and its own cache file.
    other = {"other": {"url": f"http://localhost:{site.port}/graph/private/1"}}
    assert await run(tmp_path, other) == []
    assert (await requests_seen(site))["paths"]["/robots.txt"] == 3
    assert len(list((tmp_path / POLITE_DIR / "robots").glob("*.json"))) == 2


async def test_without_robots_txt_respect_the_disallowed_page_is_fetched(
    site: LocalSite, tmp_path: Path
) -> None:
    tasks = {"private": {"url": site.url("/graph/private/3")}}
    assert await run(tmp_path, tasks, respect_robots_txt=False) == ["private"]
    assert (await requests_seen(site))["paths"] == {"/graph/private/3": 1}


@pytest.fixture
async def robots_site() -> AsyncIterator[tuple[str, Counter[str], dict[str, int]]]:
    """A server whose robots.txt answers the status in `state["robots"]`; counts every path."""
    seen: Counter[str] = Counter()
    state = {"robots": 200}

    async def robots(request: web.Request) -> web.Response:
        seen[request.path] += 1
        return web.Response(status=state["robots"], text="User-agent: *\nDisallow: /secret\n")

    async def page(request: web.Request) -> web.Response:
        seen[request.path] += 1
        return web.Response(text="<html><title>ok</title></html>", content_type="text/html")

    app = web.Application()
    app.add_routes([web.get("/robots.txt", robots), web.get("/{name}", page)])
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}", seen, state
    finally:
        await runner.cleanup()


async def test_a_robots_txt_404_allows_everything(
    robots_site: tuple[str, Counter[str], dict[str, int]], tmp_path: Path
) -> None:
    base, seen, state = robots_site
    state["robots"] = 404
    tasks = {"secret": {"url": f"{base}/secret"}, "open": {"url": f"{base}/open"}}
    assert sorted(await run(tmp_path, tasks)) == ["open", "secret"]
    assert seen == {"/robots.txt": 1, "/secret": 1, "/open": 1}


async def test_a_robots_txt_503_stops_the_origin_for_the_run_as_a_transient_failure(
    robots_site: tuple[str, Counter[str], dict[str, int]], tmp_path: Path
) -> None:
    base, seen, state = robots_site
    state["robots"] = 503
    tasks = {f"t{n}": {"url": f"{base}/page{n}"} for n in range(5)}
    assert await run(tmp_path, tasks) == []
    assert seen == {"/robots.txt": 1}  # read once for the run, no page asked
    status = load_status(tmp_path, "t0")
    assert status is not None and status["scrape_error_kind"] == "transient"
    assert "robots.txt of" in status["scrape_status"] and "HTTP 503" in status["scrape_status"]
    assert decide(status, "scrape", RetryRules(backoff_base_seconds=0), utc_now()) == Decision.DUE

    state["robots"] = 200  # the next run reads it again (a failure is not cached) and goes on
    assert sorted(await run(tmp_path, list(tasks))) == sorted(tasks)
    assert seen["/robots.txt"] == 2

    state["robots"] = 503  # once a copy is cached, an unreachable robots.txt uses it
    assert (
        await run(tmp_path, {"secret": {"url": f"{base}/secret"}}, robots_max_age_seconds=0) == []
    )
    assert seen["/robots.txt"] == 3 and seen["/secret"] == 0
    secret = load_status(tmp_path, "secret")
    assert secret is not None and secret["scrape_error_kind"] == "disallowed"


async def test_crawl_delay_spaces_the_requests_and_does_not_count_against_the_step_limit(
    tmp_path: Path,
) -> None:
    tasks = {f"g{n}": {"url": f"/graph/{n}"} for n in range(6)}
    # Each page takes 0.3 s: six tasks at once overlap, unless 1 s separates their starts.
    async with LocalSite(pages=1, graph_delay_seconds=0.3) as free:
        urls = {k: {"url": free.url(v["url"])} for k, v in tasks.items()}
        assert len(await run(tmp_path / "free", urls)) == 6
        assert (await requests_seen(free))["max_in_flight"] == {f"127.0.0.1:{free.port}": 6}
    async with LocalSite(pages=1, graph_delay_seconds=0.3, crawl_delay_seconds=1.0) as slow:
        urls = {k: {"url": slow.url(v["url"])} for k, v in tasks.items()}
        # The last task waits 5 s for its turn: longer than the 2 s step limit, yet it succeeds.
        assert len(await run(tmp_path / "slow", urls, timeout=2.0)) == 6
        seen = await requests_seen(slow)
    assert seen["max_in_flight"] == {f"127.0.0.1:{slow.port}": 1}
    assert seen["statuses"]["/graph/5"] == {"200": 1}
    booked = tmp_path / "slow" / POLITE_DIR / "hosts" / f"127.0.0.1_{slow.port}" / "next-start"
    assert booked.exists()  # the turn is booked in the data folder, for other processes too


async def test_per_host_delay_spaces_the_requests_too(tmp_path: Path) -> None:
    async with LocalSite(pages=1, graph_delay_seconds=0.3) as site:
        urls = {f"g{n}": {"url": site.url(f"/graph/{n}")} for n in range(3)}
        assert len(await run(tmp_path, urls, per_host_delay_seconds=1.0)) == 3
        seen = await requests_seen(site)
    assert seen["max_in_flight"] == {f"127.0.0.1:{site.port}": 1}


async def test_a_redirect_to_another_host_takes_that_hosts_slots_and_its_robots_txt(
    tmp_path: Path,
) -> None:
    # Two runs at once (two sessions: each connector alone would allow 2 per host), twelve
    # tasks each on 127.0.0.1, redirected to slow pages on localhost (another host to a
    # crawler): localhost's limit of 2 holds for the hops of both, and its robots.txt is read.
    async with LocalSite(pages=1) as site:
        other = site.url("").replace("127.0.0.1", "localhost").rstrip("/")

        def tasks(run_name: str) -> dict[str, dict[str, Any]]:
            return {
                f"{run_name}{n}": {
                    "url": site.url(f"/hostile/r/to?url={other}/slow/0.3?n={run_name}{n}")
                }
                for n in range(6)
            }

        done = await asyncio.gather(
            run(tmp_path, tasks("a"), max_per_host=2), run(tmp_path, tasks("b"), max_per_host=2)
        )
        assert [len(keys) for keys in done] == [6, 6]
        seen = await requests_seen(site)
    assert seen["max_in_flight"][f"localhost:{site.port}"] == 2
    assert seen["paths"]["/robots.txt"] == 2  # one per host, shared by the runs
    assert seen["paths"]["/slow/0.3"] == 12
