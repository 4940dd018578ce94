"""What the advisory regressions (`test_advisories*.py`) share: a public site on a global
address (a network namespace's veth, `support.netns`), an internal site on loopback that counts
every request, a bare TCP listener that counts connections, and the gate's refusal."""

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from scrapeflow_dagster.engine.errors import ScrapeError
from scrapeflow_dagster.engine.gate.fetch import fetch
from scrapeflow_dagster.engine.gate.opening import open_gate
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster_tests.conftest import fast_settings
from scrapeflow_dagster_tests.engine.gate.sites import Site
from scrapeflow_dagster_tests.support.netns import PublicHost, public_host  # noqa: F401


def one_try() -> ScrapeSettings:
    """Default limits, one try per request (a refusal is final anyway)."""
    return fast_settings(max_attempts=1)


class Listener:
    """A bare TCP server on loopback that counts the connections made to it and closes them:
    where an `ftp:` (or any non-http) URL points, to show nothing connected."""

    def __init__(self) -> None:
        self.connections = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        writer.close()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


@pytest.fixture
async def public(public_host: PublicHost) -> AsyncIterator[Site]:  # noqa: F811
    """A site on a global address: the public web."""
    site = Site(public_host.outside)
    await site.start()
    yield site
    await site.stop()


@pytest.fixture
async def internal() -> AsyncIterator[Site]:
    """A site on 127.0.0.1: what a public page must never lead to."""
    site = Site("127.0.0.1")
    await site.start()
    yield site
    await site.stop()


@pytest.fixture
async def listener() -> AsyncIterator[Listener]:
    """A TCP port on 127.0.0.1 counting connections."""
    made = Listener()
    await made.start()
    yield made
    await made.stop()


async def fetch_refused(tmp_path: Path, params: dict[str, Any]) -> ScrapeError:
    """The error `fetch` of `params` raises through a fresh gate (it must raise one)."""
    async with open_gate(tmp_path, one_try()) as context:
        with pytest.raises(ScrapeError) as raised:
            await fetch(context, params)
    return raised.value


def only_robots(site: Site) -> Counter[tuple[str, str]]:
    """What `site` saw besides its robots.txt."""
    return Counter({key: n for key, n in site.seen.items() if key[1] != "/robots.txt"})
