"""`BatchedSqliteEventLogStorage` in this process, on real SQLite files: when its buffer
writes (the next other event, a full or old buffer, a read, a batch, exit, not a forked
child), its `dagster.yaml` configuration, and the Dagster versions it accepts."""

import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import dagster as dg
import pytest

from scrapeflow_dagster.storage.dagster_internals import version_guard
from scrapeflow_dagster.storage.sqlite.event_log import BatchedSqliteEventLogStorage
from scrapeflow_dagster_tests.storage.events import RUN, log_line, materialized, observed, planned
from scrapeflow_dagster_tests.storage.homes import REPO_ROOT, instance_of, write_home
from scrapeflow_dagster_tests.storage.sqlite_shards import shard_rows


def test_asset_events_wait_for_the_next_other_event_and_keep_their_order(
    storage: BatchedSqliteEventLogStorage, tmp_path: Path
) -> None:
    # A failed partition's observation waits with them (a run logs one per failed task).
    for event in (
        materialized(RUN, "a", "p0"),
        observed(RUN, "a", "p1"),
        materialized(RUN, "a", "p2"),
    ):
        storage.store_event(event)
    assert storage.buffered_event_count == 3
    assert shard_rows(tmp_path / "runs", RUN) == []

    storage.store_event(log_line(RUN))

    assert storage.buffered_event_count == 0
    assert shard_rows(tmp_path / "runs", RUN) == [
        ("ASSET_MATERIALIZATION", "p0"),
        ("ASSET_OBSERVATION", "p1"),
        ("ASSET_MATERIALIZATION", "p2"),
        (None, None),
    ]


def test_a_full_buffer_is_written(storage: BatchedSqliteEventLogStorage, tmp_path: Path) -> None:
    for i in range(10):
        storage.store_event(planned(RUN, "a", f"p{i}"))
    assert storage.buffered_event_count == 2
    assert len(shard_rows(tmp_path / "runs", "index")) == 8


def test_an_old_buffer_is_written_when_the_next_event_comes(tmp_path: Path) -> None:
    storage = BatchedSqliteEventLogStorage(str(tmp_path / "runs"), max_buffer_seconds=0.0)
    storage.store_event(planned(RUN, "a", "p0"))
    storage.store_event(planned(RUN, "a", "p1"))
    assert storage.buffered_event_count == 0
    assert len(shard_rows(tmp_path / "runs", RUN)) == 2
    storage.dispose()


def test_reads_see_the_buffered_events(storage: BatchedSqliteEventLogStorage) -> None:
    for i in range(3):
        storage.store_event(materialized(RUN, "a", f"p{i}"))
    found = storage.fetch_materializations(dg.AssetKey("a"), limit=10).records
    assert [record.partition_key for record in found] == ["p2", "p1", "p0"]
    assert storage.buffered_event_count == 0


def test_partitions_added_while_events_wait_leave_them_buffered(
    storage: BatchedSqliteEventLogStorage, tmp_path: Path
) -> None:
    # A crawl streamed through one run adds partitions every few pages: no flush for each.
    for i in range(3):
        storage.store_event(materialized(RUN, "a", f"p{i}"))
    storage.add_dynamic_partitions("tasks", ["p3", "p4"])
    assert storage.buffered_event_count == 3
    assert shard_rows(tmp_path / "runs", RUN) == []
    assert storage.get_dynamic_partitions("tasks") == ["p3", "p4"]  # a read: written now
    assert storage.buffered_event_count == 0
    assert len(shard_rows(tmp_path / "runs", RUN)) == 3


def test_a_batch_is_written_before_store_event_batch_returns(
    storage: BatchedSqliteEventLogStorage, tmp_path: Path
) -> None:
    storage.store_event(planned(RUN, "a", "p0"))
    storage.store_event_batch([planned(RUN, "a", "p1"), planned(RUN, "b", "p1")])
    assert storage.buffered_event_count == 0
    assert [row[1] for row in shard_rows(tmp_path / "runs", "index")] == ["p0", "p1", "p1"]


def test_runless_materialisations_are_not_buffered(
    storage: BatchedSqliteEventLogStorage,
) -> None:
    storage.store_event(materialized("", "a", "p0"))
    assert storage.buffered_event_count == 0


def test_runless_planned_events_are_buffered_and_written_in_order(
    storage: BatchedSqliteEventLogStorage, tmp_path: Path
) -> None:
    # The executor assets write one per task a failing run could not attempt.
    storage.store_event_batch([planned("", "a", "p0"), planned("", "a", "p1")])
    storage.store_event(planned("", "a", "p2"))
    assert storage.buffered_event_count == 1
    storage.flush()
    assert [row[1] for row in shard_rows(tmp_path / "runs", "index")] == ["p0", "p1", "p2"]


def test_the_buffer_is_written_at_exit(tmp_path: Path) -> None:
    script = (
        "from scrapeflow_dagster.storage.sqlite.event_log import BatchedSqliteEventLogStorage\n"
        "from scrapeflow_dagster_tests.storage.events import planned\n"
        f"storage = BatchedSqliteEventLogStorage({str(tmp_path / 'runs')!r})\n"
        f"storage.store_event(planned({RUN!r}, 'a', 'p0'))\n"
        "assert storage.buffered_event_count == 1\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=120)
    assert shard_rows(tmp_path / "runs", RUN) == [("ASSET_MATERIALIZATION_PLANNED", "p0")]


def test_a_forked_child_does_not_write_its_parents_buffer(
    storage: BatchedSqliteEventLogStorage, tmp_path: Path
) -> None:
    storage.store_event(planned(RUN, "a", "p0"))
    pid = os.fork()
    if pid == 0:  # the child: exits without Python's cleanup, as multiprocessing's fork does
        os._exit(0 if storage.buffered_event_count == 0 else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert storage.buffered_event_count == 1
    storage.flush()
    assert len(shard_rows(tmp_path / "runs", RUN)) == 1


def test_dagster_yaml_configures_it_for_every_process(tmp_path: Path) -> None:
    home = write_home(
        tmp_path / "home",
        batched=True,
        options={"max_buffered_events": 7, "max_buffer_seconds": 0.5},
    )
    with instance_of(home) as instance:
        storage = instance.event_log_storage
        assert isinstance(storage, BatchedSqliteEventLogStorage)
        config = storage.inst_data.config_dict if storage.inst_data else {}
        assert config["max_buffered_events"] == 7
        # Step and run processes rebuild the instance from its ref.
        with dg.DagsterInstance.from_ref(instance.get_ref()) as rebuilt:
            assert isinstance(rebuilt.event_log_storage, BatchedSqliteEventLogStorage)
            assert rebuilt.event_log_storage.inst_data == storage.inst_data


@pytest.mark.parametrize("version", ["1.13.26", "1.14.0", "1.13.27rc1", "1!0+dev"])
def test_another_dagster_version_is_refused_with_one_warning(version: str) -> None:
    with pytest.warns(RuntimeWarning, match=re.escape(f"this is dagster {version}:")):
        assert not version_guard.supports_dagster_version(version)
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        assert not version_guard.supports_dagster_version(version)
    assert again == []


@pytest.mark.parametrize("version", version_guard.VERIFIED["dagster"])
def test_each_verified_version_is_accepted(version: str) -> None:
    assert version_guard.supports_dagster_version(version)


def test_make_compat_admits_the_installed_version_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(version_guard.ADMIT_INSTALLED_ENV, "1")
    assert version_guard.supports_dagster_version(dg.__version__)
    # Another version is still refused (one the refusal test above has not warned about).
    with pytest.warns(RuntimeWarning, match=re.escape("this is dagster 1.14.1:")):
        assert not version_guard.supports_dagster_version("1.14.1")
