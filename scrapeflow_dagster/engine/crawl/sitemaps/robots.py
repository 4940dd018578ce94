"""robots.txt as the sitemap reader asks it (`crawl.sitemaps`): the `Sitemap:` lines of a seed's
origin, and of each other origin an entry names (sitemaps.org cross-submission).

It is read as a page's robots.txt is (`gate.fetch`): on the route of the asker's trust, each
redirect hop guarded, and through the proxy of the try, never direct while a proxy provider is
set (a proxy that fails is charged and another tried). What it announces carries the trust of
its final answer, hop by hop (`polite.robots`): an intranet seed's robots.txt that redirects to
a public host announces public sitemaps, as that host's links are public.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from yarl import URL

from scrapeflow_dagster.engine.errors import ErrorKind, ProxyError, ScrapeError
from scrapeflow_dagster.engine.gate.route import route_of
from scrapeflow_dagster.engine.polite.robots import RobotsRules, origin_of
from scrapeflow_dagster.engine.redact import redact
from scrapeflow_dagster.engine.run.context import Context

# What aiohttp raises when the proxy, not the site, failed (through a proxy, a failed
# connection is the proxy's, as `retry` has it).
_PROXY_FAILURES = (
    ProxyError,
    aiohttp.ClientProxyConnectionError,
    aiohttp.ClientHttpProxyError,
    aiohttp.ClientConnectorError,
)


@dataclass(frozen=True)
class Announced:
    """The sitemaps a robots.txt announces, and whether its final answer was an intranet page
    (then they may be internal: `state.trust`)."""

    sitemaps: frozenset[str]
    intranet: bool = False


async def read_announced(context: Context, url: URL, params: Mapping[str, Any]) -> Announced:
    """What the robots.txt of `url`'s origin announces, read through the gate of `context`
    with the trust of `params` (task params: `trust`, `country`, `verify_tls`).

    Nothing when robots.txt is not respected; a robots.txt that cannot be read announces
    nothing either (the rules are unknown).

    Raises:
        ScrapeError: the guard refused the address, no healthy proxy is left (never direct),
            or every proxy tried failed.
        aiohttp.ClientError, TimeoutError: TLS failed.
        ValueError: `params` holds an unknown `trust`.
    """
    polite = context.polite
    if polite is None:
        return Announced(frozenset())
    route = await route_of(context, url, params)
    provider = context.proxy_provider
    verify = bool(params.get("verify_tls", context.settings.verify_tls))
    tries = 1 + (context.settings.retry.max_proxy_attempts if provider is not None else 0)
    for attempt in range(1, tries + 1):
        proxy = provider.get_one_proxy(params.get("country")) if provider is not None else None
        if provider is not None and proxy is None:
            # Going direct would expose our address to a site we chose to reach via proxies.
            raise ProxyError("no healthy proxy left in the pool (not going direct)")
        try:
            with route.guarding(url, f"robots.txt of {redact(origin_of(url))}"):
                rules = await polite.load(
                    route.session, url, proxy=proxy, verify_tls=verify, route=route
                )
        except _PROXY_FAILURES as exc:
            if provider is None or proxy is None or _not_the_proxys(exc):
                raise
            provider.report_failure(proxy, ErrorKind.PROXY)
            if attempt == tries:
                raise ProxyError(f"robots.txt through {attempt} proxies: {_why(exc)}") from None
            continue
        if provider is not None and proxy is not None:
            provider.report_success(proxy)
        return _announced(rules, intranet_route=route.intranet)
    raise AssertionError("unreachable: the last try returns or raises")


def _announced(rules: RobotsRules, *, intranet_route: bool) -> Announced:
    found = frozenset(rules.parser.sitemaps) if rules.parser is not None else frozenset[str]()
    # The rules of an origin are shared by every route that asks: they are an intranet page's
    # only for a route that may reach one.
    return Announced(found, intranet_route and rules.intranet)


def _not_the_proxys(exc: BaseException) -> bool:
    # A TLS failure is a connector error too, but the site's (permanent, as for its page).
    return isinstance(exc, aiohttp.ClientConnectorCertificateError | aiohttp.ClientSSLError)


def _why(exc: BaseException) -> str:
    if isinstance(exc, ScrapeError):
        return redact(str(exc)) or type(exc).__name__
    return f"{type(exc).__name__}: {redact(str(exc)) or 'no message'}"
