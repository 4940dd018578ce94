"""Sensor evaluation contexts for calling a sensor directly, wired as the definitions wire it."""

from pathlib import Path

import dagster as dg

from scrapeflow_dagster.lib.resources import StatusStoreResource, automation_settings_from_env


def sensor_context(instance: dg.DagsterInstance, data_dir: Path) -> dg.SensorEvaluationContext:
    """A sensor evaluation context with the status store of `data_dir` and the automation
    settings, whose fields are set by `SCRAPEFLOW_*` variables through `dg.EnvVar`."""
    store = StatusStoreResource(data_dir=str(data_dir))
    resources = {"status_store": store, "automation_settings": automation_settings_from_env()}
    return dg.build_sensor_context(instance=instance, resources=resources)
