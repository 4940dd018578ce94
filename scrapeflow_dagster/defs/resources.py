"""Resources: typed configuration that builds engine objects (no live connections here)."""

import os
from pathlib import Path
from typing import Literal

import dagster as dg
from pydantic import Field

from scrapeflow_dagster.engine.layout import DATA_DIR_ENV, DataLayout
from scrapeflow_dagster.engine.proxies import (
    ProxyProvider,
    ProxyProviderFromDict,
    ProxyProviderFromIPRoyal,
    ProxyProviderFromList,
    ProxyProviderFromProxyscrape,
    ProxyProviderFromWebshare,
)
from scrapeflow_dagster.engine.settings import RetryPolicy, ScrapeSettings

ProxyKind = Literal["none", "list", "dict", "proxyscrape", "webshare", "iproyal"]


class ScrapeSettingsResource(dg.ConfigurableResource):
    """Concurrency, timeouts, retries, body cap and TLS verification of every executor run."""

    max_parallelism: int = 100
    executor_timeout_seconds: float = 30.0
    request_timeout_seconds: float = 10.0
    max_attempts: int = 4
    max_proxy_attempts: int = 3
    backoff_base_seconds: float = 0.5
    backoff_max_seconds: float = 10.0
    retry_after_max_seconds: float = 30.0
    max_body_bytes: int = 20 * 1024 * 1024
    verify_tls: bool = True
    block_status_codes: list[int] = Field(default_factory=lambda: [403])

    def build(self) -> ScrapeSettings:
        """The engine settings these fields describe."""
        return ScrapeSettings(
            request_timeout_seconds=self.request_timeout_seconds,
            max_body_bytes=self.max_body_bytes,
            verify_tls=self.verify_tls,
            retry=RetryPolicy(
                max_attempts=self.max_attempts,
                max_proxy_attempts=self.max_proxy_attempts,
                backoff_base_seconds=self.backoff_base_seconds,
                backoff_max_seconds=self.backoff_max_seconds,
                retry_after_max_seconds=self.retry_after_max_seconds,
                block_status_codes=tuple(self.block_status_codes),
            ),
        )


class StatusStoreResource(dg.ConfigurableResource):
    """Where status files, blobs and DuckDB live (default `$SCRAPEFLOW_DATA_DIR` or `data/`)."""

    data_dir: str | None = None

    def layout(self) -> DataLayout:
        """The data layout, folders created."""
        if self.data_dir:
            return DataLayout(Path(self.data_dir).resolve()).ensure()
        return DataLayout.from_env().ensure()


class ProxyProviderResource(dg.ConfigurableResource):
    """Where proxies come from and how bad ones are retired.

    Secrets (`api_key`, proxy URLs with credentials) come from `dg.EnvVar` in definitions and
    are never logged: a plain value would be stored by Dagster with every run's job snapshot.
    """

    kind: ProxyKind = "none"
    proxy_urls: list[str] = Field(default_factory=list)
    # Whitespace-separated proxy URLs, for `dg.EnvVar("SCRAPEFLOW_PROXY_URLS")`.
    proxy_urls_text: str | None = None
    proxies_by_country: dict[str, list[str]] = Field(default_factory=dict)
    api_key: str | None = None
    order_id: str | None = None
    base_url: str | None = None
    error_threshold: float = 3.0
    cooldown_seconds: float = 300.0

    def build(self) -> ProxyProvider | None:
        """A fresh provider (its health state lives for one run), or None for `kind="none"`."""
        common = {
            "error_threshold": self.error_threshold,
            "cooldown_seconds": self.cooldown_seconds,
        }
        service = {"base_url": self.base_url} if self.base_url else {}
        match self.kind:
            case "none":
                return None
            case "list":
                urls = [*self.proxy_urls, *(self.proxy_urls_text or "").split()]
                return ProxyProviderFromList(urls, **common)
            case "dict":
                return ProxyProviderFromDict(self.proxies_by_country, **common)
            case "proxyscrape":
                return ProxyProviderFromProxyscrape(**service, **common)
            case "webshare":
                return ProxyProviderFromWebshare(api_key=self.api_key, **service, **common)
            case "iproyal":
                return ProxyProviderFromIPRoyal(
                    api_key=self.api_key, order_id=self.order_id, **service, **common
                )


def proxy_resource_from_env() -> ProxyProviderResource:
    """The proxy resource chosen by `SCRAPEFLOW_PROXY_KIND`, secrets read through `dg.EnvVar`."""
    kind = os.environ.get("SCRAPEFLOW_PROXY_KIND", "none")
    if kind == "webshare":
        return ProxyProviderResource(kind="webshare", api_key=dg.EnvVar("WEBSHARE_API_KEY"))
    if kind == "iproyal":
        return ProxyProviderResource(
            kind="iproyal",
            api_key=dg.EnvVar("IPROYAL_API_KEY"),
            order_id=dg.EnvVar("IPROYAL_ORDER_ID"),
        )
    if kind == "list":
        # Through EnvVar: the URLs carry passwords, which must not land in the job snapshot.
        return ProxyProviderResource(
            kind="list", proxy_urls_text=dg.EnvVar("SCRAPEFLOW_PROXY_URLS")
        )
    if kind == "proxyscrape":
        return ProxyProviderResource(kind="proxyscrape")
    return ProxyProviderResource()


__all__ = [
    "DATA_DIR_ENV",
    "ProxyProviderResource",
    "ScrapeSettingsResource",
    "StatusStoreResource",
    "proxy_resource_from_env",
]
