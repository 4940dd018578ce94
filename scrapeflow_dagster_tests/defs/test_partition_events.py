"""A materialisation stored through `partition_events.materialization_logger` is the row stock
Dagster stores for `context.log_event` of the same materialisation: every field of the stored
entry but its time, on a stock SQLite home and on ours, in a step that runs in the run's own
process (whose result lists it) and in a step process of the multiprocess executor (whose
result need not). A Dagster upgrade that changes how `log_event` builds the event fails here.
"""

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster._serdes import serialize_value

from scrapeflow_dagster.lib.partition_events import materialization_logger
from scrapeflow_dagster_tests.support.paths import REPO_ROOT
from scrapeflow_dagster_tests.support.processes import init_dagster_home

METADATA = {"url": "https://example.com/a?b=1", "http_status": 200, "size": 1234, "skipped": True}


@dg.op
def log_two(context: dg.OpExecutionContext) -> None:
    """Partition `stock` through `log_event`, `direct` through the logger under test."""
    context.log_event(dg.AssetMaterialization("pair", partition="stock", metadata=METADATA))
    materialization_logger(context)(
        dg.AssetMaterialization("pair", partition="direct", metadata=METADATA)
    )


@dg.job
def pair_job() -> None:
    log_two()


def _normalised(entry: dg.EventLogEntry) -> dict[str, Any]:
    """The stored entry as its serialised fields, its time and partition left out."""
    fields = json.loads(serialize_value(entry))
    fields.pop("timestamp")
    event = fields["dagster_event"]
    event["event_specific_data"]["materialization"]["partition"] = None
    return dict(fields)


@pytest.fixture(params=["stock", "ours"])
def instance(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dg.DagsterInstance]:
    if request.param == "ours":
        home = init_dagster_home(tmp_path / "home")
    else:
        home = tmp_path / "home"
        home.mkdir()
        (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    with dg.DagsterInstance.from_config(str(home)) as opened:
        yield opened


def stored(instance: dg.DagsterInstance) -> dict[str, dg.EventLogEntry]:
    records = instance.fetch_materializations(dg.AssetKey("pair"), limit=10).records
    found = {}
    for record in records:
        event = record.event_log_entry.dagster_event
        assert event is not None and event.partition is not None
        found[event.partition] = record.event_log_entry
    return found


def test_in_the_runs_own_process_the_row_and_the_result_are_stocks(
    instance: dg.DagsterInstance,
) -> None:
    result = pair_job.execute_in_process(instance=instance)
    rows = stored(instance)
    assert sorted(rows) == ["direct", "stock"]
    assert _normalised(rows["direct"]) == _normalised(rows["stock"])
    listed = [e.partition for e in result.all_events if e.is_step_materialization]
    assert listed == ["stock", "direct"]


def test_in_a_step_process_the_row_is_stocks(
    instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(REPO_ROOT))  # the step process imports this module
    result = dg.execute_job(dg.reconstructable(pair_job), instance=instance)
    assert result.success
    rows = stored(instance)
    assert sorted(rows) == ["direct", "stock"]
    assert _normalised(rows["direct"]) == _normalised(rows["stock"])
    direct = rows["direct"].dagster_event
    assert direct is not None and direct.pid != os.getpid()  # stored by the step process
