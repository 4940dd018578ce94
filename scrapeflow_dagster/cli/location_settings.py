"""The settings a code location's runs fetch with, for fetches a command makes itself (the
sitemaps `scrapeflow crawl` reads): the same User-Agent, caps, address guard, politeness and
proxies as the runs, from the location's `scrape_settings` and `proxy_provider` resources."""

import importlib
from typing import Any

from scrapeflow_dagster.engine.proxies import ProxyProvider
from scrapeflow_dagster.engine.settings import ScrapeSettings


def gate_settings(module: str) -> tuple[ScrapeSettings, ProxyProvider | None]:
    """The engine settings and proxy provider of the definitions in `module` (defaults where
    the location has no such resource); their `dg.EnvVar` fields resolved as a run's are.

    Raises:
        ValueError: naming the field when a resource's configuration is invalid.
    """
    import dagster as dg

    from scrapeflow_dagster.lib.resources import ProxyProviderResource
    from scrapeflow_dagster.lib.scrape_settings import ScrapeSettingsResource

    loaded = importlib.import_module(module)
    given: dict[str, Any] = {}
    for found in vars(loaded).values():
        if isinstance(found, dg.Definitions):
            given.update(found.resources or {})
    wanted = {
        name: given[name]
        for name, kind in (
            ("scrape_settings", ScrapeSettingsResource),
            ("proxy_provider", ProxyProviderResource),
        )
        if isinstance(given.get(name), kind)
    }
    if not wanted:
        return ScrapeSettings(), None
    with dg.build_resources(wanted) as resources:
        settings = getattr(resources, "scrape_settings", None)
        proxies = getattr(resources, "proxy_provider", None)
        return (
            settings.build() if settings is not None else ScrapeSettings(),
            proxies.build() if proxies is not None else None,
        )
