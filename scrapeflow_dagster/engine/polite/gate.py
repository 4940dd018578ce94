"""`Politeness`: what a run asks before each request (robots.txt) and around it (host slots)."""

from pathlib import Path

import aiohttp
from yarl import URL

from scrapeflow_dagster.engine.errors import DisallowedError, RobotsUnavailableError
from scrapeflow_dagster.engine.polite.hosts import HostSlots, Slot, WaitGuard
from scrapeflow_dagster.engine.polite.robots import (
    ROBOTS_DIR,
    HopRoute,
    RobotsCache,
    RobotsRules,
    origin_of,
)
from scrapeflow_dagster.engine.settings import PoliteSettings
from scrapeflow_dagster.engine.tasks.urls import host_port


def host_of(url: URL) -> str:
    """`host:port` of `url`: the unit of per-host limits (as a server's Host header names it,
    an IPv6 host in brackets as robots.txt's origin spells it: `tasks.urls.host_port`)."""
    return host_port(url)


class Politeness:
    """robots.txt rules and per-host limits of one run, with their state under `directory`
    (`robots/` caches robots.txt files, `hosts/` holds the slot and delay files).

    `check` before a task's first request; `try_acquire(host) or await acquire(host)` and
    `release(slot)` around every request (retries included).
    """

    def __init__(
        self,
        directory: Path,
        settings: PoliteSettings,
        *,
        user_agent: str,
        wait_guard: WaitGuard | None = None,
    ) -> None:
        self.settings = settings
        self.user_agent = user_agent
        shared = None
        if settings.shared_limits_url:
            from scrapeflow_dagster.engine.polite.shared import SharedHostLimits

            shared = SharedHostLimits(settings.shared_limits_url)
        self.hosts = HostSlots(
            directory / "hosts",
            limit=settings.max_per_host,
            wait_guard=wait_guard,
            across_machines=shared,
        )
        self.robots = (
            RobotsCache(directory / ROBOTS_DIR, settings, user_agent=user_agent, hosts=self.hosts)
            if settings.respect_robots_txt
            else None
        )
        self._base_delay = settings.per_host_delay_seconds
        self._delays: dict[str, float] = {}  # host -> a Crawl-delay longer than the base delay

    async def check(
        self,
        session: aiohttp.ClientSession,
        url: URL,
        *,
        proxy: str | None = None,
        verify_tls: bool = True,
        route: HopRoute | None = None,
    ) -> None:
        """Make sure robots.txt lets us fetch `url`; its rules are loaded on first use, through
        `session`, each redirect hop through `route` (the request's address guard).

        Raises:
            DisallowedError: robots.txt disallows `url` for our User-Agent.
            RobotsUnavailableError: robots.txt could not be read (5xx, 429, network) and no
                copy is cached: nothing at that origin is fetched in this run.
            aiohttp.ClientError: the proxy or TLS verification failed while fetching
                robots.txt (nothing is remembered: the next try fetches it again).
        """
        if self.robots is None:
            return
        origin = origin_of(url)
        rules = self.robots.known(origin)
        if rules is None:
            rules = await self.load(session, url, proxy=proxy, verify_tls=verify_tls, route=route)
        if not rules.allows(str(url), self.user_agent):
            if rules.unreachable is not None:
                raise RobotsUnavailableError(
                    f"robots.txt of {origin} could not be read ({rules.unreachable}): "
                    "nothing there is fetched until it can"
                )
            raise DisallowedError(f"robots.txt of {origin} disallows {url.path} for our User-Agent")

    async def load(
        self,
        session: aiohttp.ClientSession,
        url: URL,
        *,
        proxy: str | None = None,
        verify_tls: bool = True,
        route: HopRoute | None = None,
    ) -> RobotsRules:
        """The robots.txt rules of `url`'s origin (cached, else fetched as `check` fetches
        them); its `Crawl-delay` noted for the host. Without `respect_robots_txt`, no rules.
        """
        if self.robots is None:
            return RobotsRules(None, None)
        origin = origin_of(url)
        rules = await self.robots.rules(
            session, origin, proxy=proxy, verify_tls=verify_tls, route=route
        )
        host = host_of(url)
        delay = rules.crawl_delay_seconds(self.user_agent)
        if delay is not None and delay > self._base_delay:
            self._delays[host] = delay
        return rules

    def try_acquire(self, host: str) -> Slot | None:
        """A slot at `host` when one is free and no delay applies, without suspending."""
        if self._base_delay > 0 or host in self._delays:
            return None
        return self.hosts.try_acquire(host)

    async def acquire(self, host: str) -> Slot:
        """Wait for a slot at `host` and for the host's delay since the previous request."""
        delay = self._delays.get(host, self._base_delay)
        return await self.hosts.acquire(host, delay_seconds=delay)

    def release(self, slot: Slot) -> None:
        """Give back a slot taken with `try_acquire` or `acquire`."""
        self.hosts.release(slot)

    def close(self) -> None:
        """Let go of the slot file; call once the run's requests are over."""
        self.hosts.close()

    async def aclose(self) -> None:
        """`close`, and the connections to Redis of limits shared across machines."""
        await self.hosts.aclose()
