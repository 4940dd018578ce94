"""The health check behind `ProxyProvider.check_proxies`: which proxies answer a known URL.

Proxies are probed concurrently, at most `CHECK_CONCURRENCY` at once, and the whole check has a
deadline, so a proxy that accepts a connection and then hangs cannot stall it.
"""

import asyncio
import logging
import math

import aiohttp

from scrapeflow_dagster.engine.redact import proxy_host, redact

logger = logging.getLogger(__name__)

DEFAULT_CHECK_URL = "http://www.gstatic.com/generate_204"
CHECK_CONCURRENCY = 50


async def find_alive_proxies(
    session: aiohttp.ClientSession,
    candidates: list[str],
    *,
    check_url: str,
    timeout: float,
    tries: int,
) -> set[str]:
    """Fetch `check_url` through every candidate; return the ones that answered below 400.

    A proxy passes on its first try that gets a status below 400. Network errors and timeouts
    are a failed try, never an exception.

    Args:
        session: HTTP session to probe with (its connector should allow `CHECK_CONCURRENCY`).
        candidates: fully qualified proxy URLs.
        check_url: URL fetched through each proxy.
        timeout: bound in seconds on each try; the whole check is bounded by
            `timeout * tries` per wave of `CHECK_CONCURRENCY` proxies.
        tries: tries per proxy (at least one).

    Raises:
        Exception: whatever a probe raised that is not a network error (a bug, not a dead proxy).
    """
    waves = math.ceil(len(candidates) / CHECK_CONCURRENCY)
    deadline = timeout * tries * waves
    semaphore = asyncio.Semaphore(CHECK_CONCURRENCY)
    tasks = {
        asyncio.create_task(
            _check_one(session, semaphore, proxy, check_url=check_url, timeout=timeout, tries=tries)
        ): proxy
        for proxy in candidates
    }
    try:
        # A little slack over the sum of tries so a try that just made it is not cut off.
        done, _ = await asyncio.wait(tasks, timeout=deadline + timeout)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    alive: set[str] = set()
    for task in done:
        if task.cancelled():
            continue
        if (error := task.exception()) is not None:
            raise error  # a bug, not a dead proxy: _probe catches network errors
        if task.result():
            alive.add(tasks[task])
    return alive


async def _check_one(
    session: aiohttp.ClientSession,
    semaphore: asyncio.Semaphore,
    proxy: str,
    *,
    check_url: str,
    timeout: float,
    tries: int,
) -> bool:
    async with semaphore:
        for _ in range(tries):
            if await _probe(session, proxy, check_url=check_url, timeout=timeout):
                return True
        return False


async def _probe(
    session: aiohttp.ClientSession, proxy: str, *, check_url: str, timeout: float
) -> bool:
    try:
        # aiohttp's own timeout does not cover every stage of a proxied request; this does.
        async with asyncio.timeout(timeout):
            async with session.get(
                check_url,
                proxy=proxy,
                timeout=aiohttp.ClientTimeout(total=timeout),
                allow_redirects=False,
            ) as response:
                status = response.status
    except TimeoutError:
        logger.debug("proxy %s failed a check: no answer in %s s", proxy_host(proxy), timeout)
        return False
    except (aiohttp.ClientError, OSError, ValueError) as exc:
        reason = redact(f"{type(exc).__name__}: {exc}")
        logger.debug("proxy %s failed a check: %s", proxy_host(proxy), reason)
        return False
    if status >= 400:
        logger.debug("proxy %s failed a check: HTTP %d", proxy_host(proxy), status)
    return status < 400
