"""The `scrape` tests' helpers: one task run through a chain, and the site's flaky counters."""

from pathlib import Path
from typing import Any

import aiohttp

from scrapeflow_dagster.engine.executor import Executor, execute_async
from scrapeflow_dagster.engine.proxies import ProxyProvider
from scrapeflow_dagster.engine.scrape import scrape
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.status import StatusData, load_status
from scrapeflow_dagster.site.server import LocalSite


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


async def flaky_requests(site: LocalSite, name: str) -> int:
    """How many requests the site got for `/flaky/{name}`."""
    async with (
        aiohttp.ClientSession() as session,
        session.get(site.url(f"/control/flaky/{name}")) as response,
    ):
        state = await response.json()
    return int(state["requests"])
