"""In-process runs of the executor assets, with the resources the definitions give them."""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dagster as dg

from scrapeflow_dagster.lib.resources import ProxyProviderResource, StatusStoreResource
from scrapeflow_dagster.lib.scrape_settings import ScrapeSettingsResource


def run_resources(
    data_dir: Path, *, proxy: Any = None, **settings: Any
) -> dict[str, dg.ConfigurableResource]:
    """The executor assets' resources for an in-process run; `settings` of ScrapeSettings."""
    return {
        "scrape_settings": ScrapeSettingsResource(**settings),
        "status_store": StatusStoreResource(data_dir=str(data_dir)),
        "proxy_provider": proxy if proxy is not None else ProxyProviderResource(),
    }


def run_assets(
    instance: dg.DagsterInstance,
    resources: Mapping[str, Any],
    selection: Any,
    tags: Mapping[str, str],
    run_config: Mapping[str, Any] | None = None,
) -> dg.ExecuteInProcessResult:
    """One in-process run of the shipped chain, unsharded (one step: the sharded one is tested
    in `scaleout/`), materialising the executor assets in `selection`; failures do not
    raise."""
    return dg.materialize(
        _unsharded_assets(),
        selection=selection,
        instance=instance,
        tags=dict(tags),
        run_config=dict(run_config or {}),
        resources=dict(resources),
        raise_on_error=False,
    )


def _unsharded_assets() -> list[dg.AssetsDefinition]:
    # Imported here, once the tier's conftest filters Dagster's beta warnings: the asset
    # decorators warn about beta parameters when the module loads.
    from scrapeflow_dagster.defs.assets import build_executor_assets
    from scrapeflow_dagster.defs.factory import executor_chain
    from scrapeflow_dagster.lib.executor_assets import executor_asset

    global _UNSHARDED
    if _UNSHARDED is None:
        _UNSHARDED = [executor_chain(build_executor_assets(executor_asset))]
    return _UNSHARDED


_UNSHARDED: list[dg.AssetsDefinition] | None = None
