"""The sensor tests' helpers: a sensor evaluated with `build_sensor_context` on a real
instance, and the run it asks for executed with the same assets, tags and config."""

import dagster as dg

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster_tests.defs.conftest import Materialize
from scrapeflow_dagster_tests.support.sensors import sensor_context


def evaluate(
    sensor: dg.SensorDefinition, instance: dg.DagsterInstance, layout: DataLayout
) -> dg.SensorResult | dg.SkipReason:
    result = sensor(sensor_context(instance, layout.root))
    assert isinstance(result, dg.SensorResult | dg.SkipReason), result
    return result


def execute(materialize_range: Materialize, request: dg.RunRequest) -> dg.ExecuteInProcessResult:
    """Run what a sensor asked for: its assets, tags (the range) and run config."""
    selection = [key.to_user_string() for key in request.asset_selection or []]
    return materialize_range(selection, tags=request.tags, run_config=request.run_config)
