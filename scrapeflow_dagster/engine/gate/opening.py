"""The sessions, address guard and politeness requests go out through: a run's (`sessions`),
or those of fetches outside a run (`open_gate`: the sitemap reader), built the same way so that
there is no second way out."""

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from scrapeflow_dagster.engine.gate.task_fetch import fetch_for_task
from scrapeflow_dagster.engine.polite.addresses import AddressGuard, GuardedResolver
from scrapeflow_dagster.engine.polite.gate import Politeness
from scrapeflow_dagster.engine.polite.robots import POLITE_DIR
from scrapeflow_dagster.engine.polite.sockets import GuardedSockets, HopScope
from scrapeflow_dagster.engine.proxies import ProxyProvider
from scrapeflow_dagster.engine.run.context import Context
from scrapeflow_dagster.engine.run.task_session import TaskSession
from scrapeflow_dagster.engine.settings import DEFAULT_TIMEOUT_SECONDS, ScrapeSettings


def own_session(
    parallelism: int,
    settings: ScrapeSettings,
    *,
    middlewares: Sequence[aiohttp.ClientMiddlewareType] = (),
    **connector_options: Any,
) -> aiohttp.ClientSession:
    """A session of the run's own: the connector's per-host limit backs up the politeness gate
    (0: none, for both), and no cookie jar is shared (tasks must not leak cookies into each
    other; a task's own cookies come from its params)."""
    connector = aiohttp.TCPConnector(
        limit=parallelism,
        limit_per_host=settings.polite.max_per_host,
        ssl=settings.verify_tls,
        **connector_options,
    )
    return aiohttp.ClientSession(
        connector=connector,
        headers={"User-Agent": settings.user_agent},
        cookie_jar=aiohttp.DummyCookieJar(),
        middlewares=middlewares,
    )


@asynccontextmanager
async def session_for(
    session: aiohttp.ClientSession | None, parallelism: int, settings: ScrapeSettings
) -> AsyncIterator[aiohttp.ClientSession]:
    """`session` when given (left open), else a session of the run's own (closed after)."""
    if session is not None:
        yield session
        return
    async with own_session(parallelism, settings) as own:
        yield own


@asynccontextmanager
async def guarded_session(
    guard: AddressGuard, parallelism: int, settings: ScrapeSettings
) -> AsyncIterator[aiohttp.ClientSession | None]:
    """The session of public routes when the guard is on (None otherwise): names resolved and
    checked for every new connection (a cached answer would skip the check, and a name may
    resolve elsewhere the next time), every socket checked again as it is opened (literals and
    redirects included, `polite.sockets`), its pool apart from the intranet routes'
    connections."""
    if not guard.enabled:
        yield None
        return
    async with own_session(
        parallelism,
        settings,
        middlewares=(HopScope(guard),),
        resolver=GuardedResolver(guard),
        use_dns_cache=False,
        socket_factory=GuardedSockets(guard),
    ) as own:
        yield own


@asynccontextmanager
async def open_gate(
    status_dir: Path,
    settings: ScrapeSettings,
    *,
    proxy_provider: ProxyProvider | None = None,
    parallelism: int = 4,
) -> AsyncIterator[Context]:
    """A context for fetches outside a run (`gate.fetch.fetch(context, params)`), through the
    same gate as the runs over `status_dir`: its robots.txt cache and host slots are theirs.

    Args:
        status_dir: the folder the runs keep status files in (`.polite/` beneath it).
        settings: the runs' settings (User-Agent, caps, timeouts, guard, politeness).
        proxy_provider: loaded here; every request then goes through one of its proxies.
        parallelism: connections held at once.
    """
    guard = AddressGuard(enabled=settings.address_guard, allowed=settings.allowed_networks)
    async with (
        own_session(parallelism, settings) as session,
        guarded_session(guard, parallelism, settings) as guarded,
    ):
        guard.session = guarded
        if proxy_provider is not None:
            await proxy_provider.load(session)
        polite = Politeness(
            Path(status_dir) / POLITE_DIR, settings.polite, user_agent=settings.user_agent
        )
        try:
            yield Context(
                dir=Path(status_dir),
                session=TaskSession(session, guard),
                forced_executors=[],
                semaphore=asyncio.Semaphore(parallelism),
                timeout_seconds=DEFAULT_TIMEOUT_SECONDS,
                proxy_provider=proxy_provider,
                settings=settings,
                polite=polite,
                guard=guard,
                unguarded_session=session,
                fetcher=fetch_for_task,
            )
        finally:
            await polite.aclose()
