"""Resources: typed configuration that builds engine objects (no live connections here).

Where the data lives (`StatusStoreResource`), how the retry sensor and the refresh schedule
decide (`AutomationSettingsResource`), where proxies come from (`ProxyProviderResource`), and
the bounds check they share; how every run fetches is `scrape_settings.ScrapeSettingsResource`.
"""

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, get_args

import dagster as dg
from pydantic import Field

from scrapeflow_dagster.engine.proxies import (
    ProxyProvider,
    ProxyProviderFromDict,
    ProxyProviderFromIPRoyal,
    ProxyProviderFromList,
    ProxyProviderFromProxyscrape,
    ProxyProviderFromWebshare,
)
from scrapeflow_dagster.engine.retry.between_runs import RetryRules
from scrapeflow_dagster.engine.settings import (
    DEFAULT_PROXY_COOLDOWN_SECONDS,
    DEFAULT_PROXY_ERROR_THRESHOLD,
    DEFAULT_REFRESH_MAX_AGE_HOURS,
)
from scrapeflow_dagster.engine.state.layout import DATA_DIR_ENV, DataLayout

ProxyKind = Literal["none", "list", "dict", "proxyscrape", "webshare", "iproyal"]


class StatusStoreResource(dg.ConfigurableResource):
    """Where status files, blobs and DuckDB live (default `$SCRAPEFLOW_DATA_DIR` or `data/`)."""

    data_dir: str | None = None

    def layout(self) -> DataLayout:
        """The data layout, folders created."""
        if self.data_dir:
            return DataLayout(Path(self.data_dir).resolve()).ensure()
        return DataLayout.from_env().ensure()


_RETRY_DEFAULTS = RetryRules()


# How the refresh schedule picks its tasks (`AutomationSettingsResource.refresh_policy`).
REFRESH_AGE, REFRESH_LEARNED = "age", "learned"
REFRESH_POLICIES = (REFRESH_AGE, REFRESH_LEARNED)


class AutomationSettingsResource(dg.ConfigurableResource):
    """How the retry sensor and the refresh schedule decide what to run again.

    Shown in the UI's resource config; each field may come from an environment variable
    (`SCRAPEFLOW_RETRY_MAX_FAILED_RUNS`, `SCRAPEFLOW_RETRY_BACKOFF_SECONDS`,
    `SCRAPEFLOW_REFRESH_MAX_AGE_HOURS`, `SCRAPEFLOW_REFRESH_POLICY`,
    `SCRAPEFLOW_REFRESH_BUDGET`, `SCRAPEFLOW_REFRESH_HOST_BUDGET`) through `dg.EnvVar` in
    definitions.
    """

    # Failed runs in a row, then stop.
    retry_max_failed_runs: int = _RETRY_DEFAULTS.max_failed_runs
    # Doubles per failure.
    retry_backoff_seconds: int = int(_RETRY_DEFAULTS.backoff_base_seconds)
    retry_backoff_max_seconds: int = int(_RETRY_DEFAULTS.backoff_max_seconds)
    # The refresh schedule re-scrapes successes older than this ("age"), or ("learned") the
    # pages whose learned revisit interval has passed, pages not yet observed by this age.
    refresh_max_age_hours: int = DEFAULT_REFRESH_MAX_AGE_HOURS
    refresh_policy: str = REFRESH_AGE
    # Requests per refresh, and per host (0: no limit); the most valuable first.
    refresh_budget: int = 0
    refresh_host_budget: int = 0

    def refresh_plan(self) -> tuple[str, int | None, int | None]:
        """`(policy, budget, host budget)`, budgets None for no limit.

        Raises:
            ValueError: naming the field: an unknown policy, a negative budget.
        """
        if self.refresh_policy not in REFRESH_POLICIES:
            raise ValueError(
                f"automation_settings.refresh_policy must be one of "
                f"{', '.join(REFRESH_POLICIES)}, got {self.refresh_policy!r}"
            )
        check_bounds(self, not_negative=("refresh_budget", "refresh_host_budget"))
        return (
            self.refresh_policy,
            self.refresh_budget or None,
            self.refresh_host_budget or None,
        )

    def refresh_max_age_seconds(self) -> float:
        """`refresh_max_age_hours` in seconds.

        Raises:
            ValueError: naming the field when it is negative (0: every success is stale).
        """
        check_bounds(self, not_negative=("refresh_max_age_hours",))
        return self.refresh_max_age_hours * 3600.0

    def retry_rules(self) -> RetryRules:
        """The between-runs retry rules these fields describe.

        Raises:
            ValueError: naming the field when a number is out of bounds.
        """
        check_bounds(
            self,
            positive=("retry_max_failed_runs",),
            not_negative=("retry_backoff_seconds", "retry_backoff_max_seconds"),
        )
        return RetryRules(
            max_failed_runs=self.retry_max_failed_runs,
            backoff_base_seconds=float(self.retry_backoff_seconds),
            backoff_max_seconds=float(self.retry_backoff_max_seconds),
        )


class ProxyProviderResource(dg.ConfigurableResource):
    """Where proxies come from and how bad ones are retired.

    Secrets (API keys, proxy URLs with credentials) come from `dg.EnvVar` in definitions and
    are never logged: a plain value would be stored by Dagster with every run's job snapshot.
    """

    kind: str = "none"  # one of ProxyKind; a str so that it can come from dg.EnvVar
    proxy_urls: list[str] = Field(default_factory=list)
    # Whitespace-separated proxy URLs, for `dg.EnvVar("SCRAPEFLOW_PROXY_URLS")`.
    proxy_urls_text: str | None = None
    proxies_by_country: dict[str, list[str]] = Field(default_factory=dict)
    api_key: str | None = None  # for the service named by `kind`
    webshare_api_key: str | None = None  # dg.EnvVar("WEBSHARE_API_KEY")
    iproyal_api_key: str | None = None  # dg.EnvVar("IPROYAL_API_KEY")
    order_id: str | None = None  # IPRoyal's order, dg.EnvVar("IPROYAL_ORDER_ID")
    base_url: str | None = None
    error_threshold: float = DEFAULT_PROXY_ERROR_THRESHOLD
    cooldown_seconds: float = DEFAULT_PROXY_COOLDOWN_SECONDS

    def build(self) -> ProxyProvider | None:
        """A fresh provider (its health state lives for one run), or None for `kind="none"`.

        Raises:
            ValueError: naming the kind when it is not one of `ProxyKind`, the fields given
                with kind `none`, a `list` or `dict` without proxies, or the first proxy URL
                that is not usable (without its credentials).
        """
        if self.kind not in get_args(ProxyKind):
            raise ValueError(f"proxy kind {self.kind!r} is not one of {get_args(ProxyKind)}")
        given = [name for name in _PROXY_SOURCE_FIELDS if getattr(self, name)]
        if self.kind == "none" and given:
            # Proxies configured but not switched on: scraping direct would show the real IP
            # that the user set proxies up to hide.
            raise ValueError(
                f"proxy_provider has {', '.join(given)} but kind 'none': set kind "
                "(SCRAPEFLOW_PROXY_KIND) to the provider they are for, or remove them"
            )
        common: dict[str, Any] = {
            "error_threshold": self.error_threshold,
            "cooldown_seconds": self.cooldown_seconds,
        }
        service: dict[str, Any] = {"base_url": self.base_url} if self.base_url else {}
        match self.kind:
            case "none":
                return None
            case "list":
                urls = [*self.proxy_urls, *(self.proxy_urls_text or "").split()]
                if not urls:
                    raise ValueError(
                        "proxy_provider kind 'list' has no proxies: set proxy_urls or "
                        "proxy_urls_text (SCRAPEFLOW_PROXY_URLS)"
                    )
                return ProxyProviderFromList(urls, **common)
            case "dict":
                if not any(self.proxies_by_country.values()):
                    raise ValueError("proxy_provider kind 'dict' has no proxies_by_country")
                return ProxyProviderFromDict(self.proxies_by_country, **common)
            case "proxyscrape":
                return ProxyProviderFromProxyscrape(**service, **common)
            case "webshare":
                api_key = self.api_key or self.webshare_api_key
                return ProxyProviderFromWebshare(api_key=api_key, **service, **common)
            case "iproyal":
                api_key = self.api_key or self.iproyal_api_key
                return ProxyProviderFromIPRoyal(
                    api_key=api_key, order_id=self.order_id, **service, **common
                )
        return None


# Fields that only mean something for a provider other than `none`.
_PROXY_SOURCE_FIELDS = (
    "proxy_urls",
    "proxy_urls_text",
    "proxies_by_country",
    "api_key",
    "webshare_api_key",
    "iproyal_api_key",
)


def check_bounds(
    resource: dg.ConfigurableResource,
    *,
    positive: Sequence[str] = (),
    not_negative: Sequence[str] = (),
) -> None:
    """Refuse out-of-bounds numbers, naming the resource and field.

    Checked when the values are used, not by pydantic constraints: a field wired to
    `dg.EnvVar.int` holds a placeholder 0 until the run resolves it.

    Raises:
        ValueError: for the first field of `positive` <= 0 or of `not_negative` < 0.
    """
    owner = type(resource).__name__
    for name in positive:
        value = getattr(resource, name)
        if value <= 0:
            raise ValueError(f"{owner}.{name} must be > 0, got {value!r}")
    for name in not_negative:
        value = getattr(resource, name)
        if value < 0:
            raise ValueError(f"{owner}.{name} must be >= 0, got {value!r}")


def _from_env(name: str) -> str | None:
    """`dg.EnvVar(name)` when the variable is set (resolved at run time, never stored), else
    None so the field keeps its default."""
    return dg.EnvVar(name) if os.environ.get(name) else None


def proxy_resource_from_env() -> ProxyProviderResource:
    """The proxy resource with every field that an environment variable sets wired to it
    through `dg.EnvVar`: `SCRAPEFLOW_PROXY_KIND`, `SCRAPEFLOW_PROXY_URLS`, `WEBSHARE_API_KEY`,
    `IPROYAL_API_KEY`, `IPROYAL_ORDER_ID`."""
    fields: dict[str, Any] = {
        "kind": _from_env("SCRAPEFLOW_PROXY_KIND"),
        # Through EnvVar: the URLs carry passwords, which must not land in the job snapshot.
        "proxy_urls_text": _from_env("SCRAPEFLOW_PROXY_URLS"),
        "webshare_api_key": _from_env("WEBSHARE_API_KEY"),
        "iproyal_api_key": _from_env("IPROYAL_API_KEY"),
        "order_id": _from_env("IPROYAL_ORDER_ID"),
    }
    return ProxyProviderResource(**{k: v for k, v in fields.items() if v is not None})


def automation_settings_from_env() -> AutomationSettingsResource:
    """The automation settings, each field that an environment variable sets wired to it."""
    names = {
        "retry_max_failed_runs": "SCRAPEFLOW_RETRY_MAX_FAILED_RUNS",
        "retry_backoff_seconds": "SCRAPEFLOW_RETRY_BACKOFF_SECONDS",
        "refresh_max_age_hours": "SCRAPEFLOW_REFRESH_MAX_AGE_HOURS",
        "refresh_budget": "SCRAPEFLOW_REFRESH_BUDGET",
        "refresh_host_budget": "SCRAPEFLOW_REFRESH_HOST_BUDGET",
    }
    fields: dict[str, Any] = {
        field: dg.EnvVar.int(env) for field, env in names.items() if os.environ.get(env)
    }
    if os.environ.get("SCRAPEFLOW_REFRESH_POLICY"):
        fields["refresh_policy"] = dg.EnvVar("SCRAPEFLOW_REFRESH_POLICY")
    return AutomationSettingsResource(**fields)


__all__ = [
    "DATA_DIR_ENV",
    "AutomationSettingsResource",
    "ProxyProviderResource",
    "StatusStoreResource",
    "automation_settings_from_env",
    "proxy_resource_from_env",
]
