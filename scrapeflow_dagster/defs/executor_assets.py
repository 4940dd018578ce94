"""Kept so that `from scrapeflow_dagster.defs.executor_assets import executor_asset` (the import
the docs show for your own executor) still works: the asset factory lives in
`scrapeflow_dagster.lib.executor_assets`, a floor below the definitions that use it."""

from scrapeflow_dagster.lib.executor_assets import (
    CHECK_NAME,
    GROUP_NAME,
    MESSAGE_CHARS,
    StepConfig,
    chain_asset,
    chain_description,
    chain_specs,
    declared_schema,
    executor_asset,
    link_for,
    run_and_log,
)

__all__ = [
    "CHECK_NAME",
    "GROUP_NAME",
    "MESSAGE_CHARS",
    "StepConfig",
    "chain_asset",
    "chain_description",
    "chain_specs",
    "declared_schema",
    "executor_asset",
    "link_for",
    "run_and_log",
]
