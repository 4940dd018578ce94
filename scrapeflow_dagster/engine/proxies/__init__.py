"""Proxies stage: where proxies come from, which are healthy, and which one a request goes through.

A provider holds proxies by country and benches a proxy whose error score reaches the threshold;
after `cooldown_seconds` the proxy comes back half-open, one failure away from the bench again.
Every piece of state is per instance, and nothing a provider logs, raises, reprs or reports in
`health()` holds a credential.

Modules:
    pool: health scores, benching, half-open re-admission and round-robin rotation.
    check: the concurrent health check behind `ProxyProvider.check_proxies`.
    provider: `ProxyProvider` (loading once, checking) and the options every provider takes.
    static: the List and Dict providers.
    service_client: the error, HTTP GET and list shape shared by the service clients.
    webshare, iproyal, proxyscrape: one service each, its API client and its provider.

Imports allowed: `scrapeflow_dagster.engine.errors`, `scrapeflow_dagster.engine.redact`,
`scrapeflow_dagster.engine.settings`, aiohttp, yarl, and pydantic (to parse service answers).
Never Dagster, never another stage of the engine: the stages above call this one.

The names below are the ones `scrapeflow_dagster.engine.proxies` and the former
`scrapeflow_dagster.engine.proxy_services` offered; scrapeflow users import them from here.
"""

from scrapeflow_dagster.engine.proxies.check import CHECK_CONCURRENCY, DEFAULT_CHECK_URL
from scrapeflow_dagster.engine.proxies.iproyal import ProxyProviderFromIPRoyal, fetch_iproyal
from scrapeflow_dagster.engine.proxies.pool import FAILURE_WEIGHTS, ProxyHealth
from scrapeflow_dagster.engine.proxies.provider import ProxyProvider, ProxyProviderOptions
from scrapeflow_dagster.engine.proxies.proxyscrape import (
    ProxyProviderFromProxyscrape,
    fetch_proxyscrape,
)
from scrapeflow_dagster.engine.proxies.service_client import (
    DEFAULT_SERVICE_TIMEOUT_SECONDS,
    ProxyServiceError,
    group_by_country,
    proxy_url,
)
from scrapeflow_dagster.engine.proxies.static import ProxyProviderFromDict, ProxyProviderFromList
from scrapeflow_dagster.engine.proxies.webshare import ProxyProviderFromWebshare, fetch_webshare

__all__ = [
    "CHECK_CONCURRENCY",
    "DEFAULT_CHECK_URL",
    "DEFAULT_SERVICE_TIMEOUT_SECONDS",
    "FAILURE_WEIGHTS",
    "ProxyHealth",
    "ProxyProvider",
    "ProxyProviderFromDict",
    "ProxyProviderFromIPRoyal",
    "ProxyProviderFromList",
    "ProxyProviderFromProxyscrape",
    "ProxyProviderFromWebshare",
    "ProxyProviderOptions",
    "ProxyServiceError",
    "fetch_iproyal",
    "fetch_proxyscrape",
    "fetch_webshare",
    "group_by_country",
    "proxy_url",
]
