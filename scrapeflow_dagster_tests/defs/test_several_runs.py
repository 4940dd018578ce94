"""Several runs at once: the shipped sensors, evaluated with `build_sensor_context` on a Dagster
home whose dagster.yaml sets `run_queue: max_concurrent_runs` (as `scrapeflow home init` writes
it), cut a large due set into as many contiguous range runs as the queue starts at a time, and
ask for the same runs when evaluated again. The real daemon does it in
`test_several_runs_daemon.py`."""

from collections.abc import Iterator, Sequence
from pathlib import Path

import dagster as dg
import pytest

from scrapeflow_dagster.defs.automation import (
    MIN_PARTITIONS_PER_SPLIT_RUN,
    RANGE_END_TAG,
    RANGE_START_TAG,
    max_concurrent_runs,
)
from scrapeflow_dagster.defs.sensors import frontier_sensor, inbox_sensor, retry_sensor
from scrapeflow_dagster.engine.crawl.frontier.batches import FrontierBatch, new_batch_id, save_batch
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.instance import dagster_yaml
from scrapeflow_dagster.lib.partitions import TASKS_PARTITIONS_NAME, tasks_partitions_def
from scrapeflow_dagster.lib.resources import StatusStoreResource
from scrapeflow_dagster.lib.scrape_settings import ScrapeSettingsResource
from scrapeflow_dagster_tests.support.sensors import sensor_context
from scrapeflow_dagster_tests.support.tasks import store_and_add, store_tasks

MAX_CONCURRENT_RUNS = 3
# Three runs of 533 or 534: more than the minimum per run, so the queue's limit decides.
TASKS = 1_600


@pytest.fixture
def queued_instance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dg.DagsterInstance]:
    """The instance of a temp `DAGSTER_HOME` whose queue starts MAX_CONCURRENT_RUNS at a time."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(dagster_yaml(home, max_concurrent_runs=MAX_CONCURRENT_RUNS))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with dg.DagsterInstance.get() as instance:
        yield instance


def run_requests(result: dg.SensorResult | dg.SkipReason) -> list[dg.RunRequest]:
    assert isinstance(result, dg.SensorResult), result
    return list(result.run_requests or [])


def assert_contiguous_cover(
    instance: dg.DagsterInstance, requests: Sequence[dg.RunRequest], keys: Sequence[str]
) -> list[int]:
    """Assert the requests' ranges follow one another without gap or overlap and span exactly
    `keys`; returns each range's size."""
    ordered = instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME)
    spans = [
        (ordered.index(r.tags[RANGE_START_TAG]), ordered.index(r.tags[RANGE_END_TAG]))
        for r in requests
    ]
    spanned = [key for first, last in spans for key in ordered[first : last + 1]]
    assert spanned == list(keys), spans
    return [last - first + 1 for first, last in spans]


def test_the_limit_is_read_from_the_homes_dagster_yaml(queued_instance: dg.DagsterInstance) -> None:
    assert max_concurrent_runs(queued_instance) == MAX_CONCURRENT_RUNS
    with dg.DagsterInstance.ephemeral() as ephemeral:  # launches runs at once: no limit known
        assert max_concurrent_runs(ephemeral) is None


def write_inbox_file(layout: DataLayout, count: int) -> list[str]:
    keys = [f"many-{n:05d}" for n in range(count)]
    lines = ["key,url", *(f"{key},http://127.0.0.1:9/page/{n}" for n, key in enumerate(keys))]
    (layout.inbox_dir / "many.csv").write_text("\n".join(lines) + "\n")
    return keys


def test_the_inbox_sensor_cuts_a_large_file_into_one_run_per_queue_slot(
    queued_instance: dg.DagsterInstance, layout: DataLayout
) -> None:
    keys = write_inbox_file(layout, TASKS)

    first = run_requests(inbox_sensor(sensor_context(queued_instance, layout.root)))
    again = run_requests(inbox_sensor(sensor_context(queued_instance, layout.root)))

    sizes = assert_contiguous_cover(queued_instance, first, keys)
    assert len(sizes) == MAX_CONCURRENT_RUNS
    assert max(sizes) - min(sizes) <= 1
    assert [r.run_key for r in again] == [r.run_key for r in first]
    assert len({r.run_key for r in first}) == len(first)


def test_without_a_known_limit_a_large_file_stays_one_run(
    instance: dg.DagsterInstance, layout: DataLayout
) -> None:
    keys = write_inbox_file(layout, TASKS)

    requests = run_requests(inbox_sensor(sensor_context(instance, layout.root)))

    assert assert_contiguous_cover(instance, requests, keys) == [TASKS]


def test_a_due_set_below_twice_the_minimum_stays_one_run(
    queued_instance: dg.DagsterInstance, layout: DataLayout
) -> None:
    keys = write_inbox_file(layout, 2 * MIN_PARTITIONS_PER_SPLIT_RUN - 1)

    requests = run_requests(inbox_sensor(sensor_context(queued_instance, layout.root)))

    assert assert_contiguous_cover(queued_instance, requests, keys) == [len(keys)]


def test_the_retry_sensor_cuts_a_large_catch_up_into_one_run_per_queue_slot(
    queued_instance: dg.DagsterInstance, layout: DataLayout
) -> None:
    # Every task scraped, none validated yet: `validation` is due over all of them (the plan
    # failures due again take too). The scrape run is a stand-in with the same key and
    # partitions: the sensor reads Dagster's statuses only, and the shipped assets' resources
    # are not this test's business.
    keys = store_and_add(
        layout,
        queued_instance,
        [(f"done-{n:05d}", f"http://127.0.0.1:9/{n}") for n in range(TASKS)],
    )

    @dg.asset(name="scrape", partitions_def=tasks_partitions_def)
    def stand_in_scrape() -> None:
        """Materialises its partition range."""

    tags = {RANGE_START_TAG: keys[0], RANGE_END_TAG: keys[-1]}
    assert dg.materialize([stand_in_scrape], instance=queued_instance, tags=tags).success

    first = run_requests(retry_sensor(sensor_context(queued_instance, layout.root)))
    again = run_requests(retry_sensor(sensor_context(queued_instance, layout.root)))

    assert all(r.asset_selection == [dg.AssetKey("validation")] for r in first)
    assert all(r.tags["scrapeflow/reason"] == "retry" for r in first)
    sizes = assert_contiguous_cover(queued_instance, first, keys)
    assert len(sizes) == MAX_CONCURRENT_RUNS
    assert [r.run_key for r in again] == [r.run_key for r in first]
    assert len({r.run_key for r in first}) == len(first)


def test_the_frontier_sensor_cuts_a_large_batch_into_one_run_per_queue_slot(
    queued_instance: dg.DagsterInstance, layout: DataLayout
) -> None:
    # A discovery's result as the engine writes it (its tasks stored, the batch applied), so
    # that the tick only turns it into partitions and runs.
    keys = store_tasks(layout, [(f"link-{n:05d}", f"http://127.0.0.1:9/{n}") for n in range(TASKS)])
    save_batch(layout, FrontierBatch(id=new_batch_id(), parents=[], applied=True, keys=keys))
    resources = {
        "status_store": StatusStoreResource(data_dir=str(layout.root)),
        "scrape_settings": ScrapeSettingsResource(),
    }

    def evaluate() -> list[dg.RunRequest]:
        context = dg.build_sensor_context(instance=queued_instance, resources=resources)
        return run_requests(frontier_sensor(context))

    first = evaluate()
    again = evaluate()

    assert queued_instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME) == keys
    sizes = assert_contiguous_cover(queued_instance, first, keys)
    assert len(sizes) == MAX_CONCURRENT_RUNS
    assert all(len(r.asset_selection or []) == 3 for r in first)
    assert [r.run_key for r in again] == [r.run_key for r in first]
