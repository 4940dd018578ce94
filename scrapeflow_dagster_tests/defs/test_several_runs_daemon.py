"""Several runs at once in the real daemon: a task file large enough for two runs, dropped into
the inbox of a home `scrapeflow home init` wrote (its queue starts 4 runs at a time), becomes
two contiguous range runs created by `dagster-daemon run` alone, which run at the same time."""

from pathlib import Path

import dagster as dg
import pytest

from scrapeflow_dagster.defs.automation import (
    MIN_PARTITIONS_PER_SPLIT_RUN,
    RANGE_END_TAG,
    RANGE_START_TAG,
    max_concurrent_runs,
)
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.lib.partitions import TASKS_PARTITIONS_NAME
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.defs.test_daemon import (  # noqa: F401 (the daemon fixture)
    Daemon,
    daemon,
    drop_into_inbox,
)

# Two runs' worth: fewer than three times the minimum per run, however many slots.
TASKS = 2 * MIN_PARTITIONS_PER_SPLIT_RUN
# The first task of each share answers this late, so that each run lasts at least this long:
# two runs started one after the other cannot overlap by chance (500 quick pages can end
# before the queue's next tick).
SLOW_SECONDS = 4


@pytest.mark.slow  # about 30 s: the daemon starts, ticks once, creates and starts the runs
def test_the_daemon_creates_one_range_run_per_share_of_a_large_inbox_file(
    site_thread: SiteThread,
    layout: DataLayout,
    daemon: Daemon,  # noqa: F811 (the fixture imported from test_daemon)
    tmp_path: Path,
) -> None:
    keys = [f"share-{n:05d}" for n in range(TASKS)]

    def url(n: int) -> str:
        slow = n % MIN_PARTITIONS_PER_SPLIT_RUN == 0
        return site_thread.url(f"/slow/{SLOW_SECONDS}?v={n}" if slow else f"/page/{n % 200}?v={n}")

    lines = [f"{key},{url(n)}" for n, key in enumerate(keys)]
    assert "Started sensor" in daemon.cli("sensor", "start", "inbox_sensor")
    daemon.start()
    drop_into_inbox(layout, tmp_path, "large.csv", ["key,url", *lines])

    with dg.DagsterInstance.get() as instance:
        assert (max_concurrent_runs(instance) or 0) >= 2

        def inbox_runs() -> list[dg.DagsterRun]:
            return list(
                instance.get_runs(filters=dg.RunsFilter(tags={"scrapeflow/reason": "inbox"}))
            )

        daemon.wait_until(lambda: len(inbox_runs()) >= 2, "two inbox runs", poll_seconds=1.0)
        runs = sorted(inbox_runs(), key=lambda run: run.tags[RANGE_START_TAG])
        ordered = instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME)

        # Both start from the queue without waiting for each other: their times overlap.
        def started() -> list[dg.RunRecord]:
            ids = [run.run_id for run in runs]
            return list(instance.get_run_records(filters=dg.RunsFilter(run_ids=ids)))

        daemon.wait_until(lambda: all(r.start_time for r in started()), "both runs to start")
        records = started()

    assert ordered == keys
    ranges = [(run.tags[RANGE_START_TAG], run.tags[RANGE_END_TAG]) for run in runs]
    half = TASKS // 2
    assert ranges == [(keys[0], keys[half - 1]), (keys[half], keys[-1])]
    assert len({run.tags["dagster/run_key"] for run in runs}) == 2
    first_end = min(record.end_time or float("inf") for record in records)
    assert max(record.start_time or 0.0 for record in records) < first_end, (
        "one ran after the other"
    )
