"""How many shards a run gets (one per core by default, none below `min_tasks_per_shard` tasks
each), when the `scrapeflow` commands pick the in-process executor, and which shard reports a
finished run leaves behind."""

import json
import os
import time
from pathlib import Path

import pytest

from scrapeflow_dagster.dagster_cli import single_step_config
from scrapeflow_dagster.scaleout.shards import ShardSettingsResource, remove_shard_reports
from scrapeflow_dagster.scaleout.sizing import SHARDS_ENV, configured_shards, shards_for


@pytest.mark.parametrize(
    ("tasks", "shards", "expected"),
    [
        (0, 2, 1),
        (999, 2, 1),
        (1_999, 2, 1),
        (2_000, 2, 2),
        (10_000, 2, 2),
        (10_000, 8, 8),
        (5_500, 8, 5),
        (50, 1, 1),
    ],
)
def test_a_run_is_split_only_as_far_as_each_shard_gets_enough_tasks(
    tasks: int, shards: int, expected: int
) -> None:
    assert shards_for(tasks, shards) == expected
    assert ShardSettingsResource(shards=shards).shard_count(tasks) == expected


def test_min_tasks_per_shard_is_a_setting_and_refused_below_one() -> None:
    assert ShardSettingsResource(shards=4, min_tasks_per_shard=10).shard_count(35) == 3
    with pytest.raises(ValueError, match="shard_settings.min_tasks_per_shard"):
        ShardSettingsResource(min_tasks_per_shard=0).shard_count(10)


def test_the_deployment_default_is_one_shard_per_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SHARDS_ENV, raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 6)
    assert configured_shards() == 6
    monkeypatch.setenv(SHARDS_ENV, "0")
    assert configured_shards() == 6
    monkeypatch.setenv(SHARDS_ENV, "1")
    assert configured_shards() == 1
    monkeypatch.setenv(SHARDS_ENV, "many")
    with pytest.raises(ValueError, match=f"{SHARDS_ENV} must be 0 .* got 'many'"):
        configured_shards()


def test_the_cli_runs_one_shard_in_process_and_several_in_processes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SCRAPEFLOW_CELERY_BROKER", raising=False)
    monkeypatch.setenv(SHARDS_ENV, "2")
    in_process = {"execution": {"config": {"in_process": {}}}}
    assert json.loads(single_step_config(None, tasks=305) or "null") == in_process
    assert single_step_config(None, tasks=10_000) is None
    assert single_step_config(None) is None  # size unknown: it may be several shards
    monkeypatch.setenv(SHARDS_ENV, "1")
    assert json.loads(single_step_config(None) or "null") == in_process
    # Another module, an explicit executor, or Celery: left as given.
    assert single_step_config(None, "my.defs", tasks=5) is None
    explicit = json.dumps({"execution": {"config": {"multiprocess": {}}}})
    assert single_step_config(explicit, tasks=5) == explicit
    monkeypatch.setenv("SCRAPEFLOW_CELERY_BROKER", "redis://127.0.0.1:6379/9")
    assert single_step_config(None, tasks=5) is None


def _touch_tree(path: Path, age_seconds: float = 0.0) -> None:
    path.mkdir(parents=True)
    (path / "result").write_bytes(b"x")
    when = time.time() - age_seconds
    os.utime(path, (when, when))
    os.utime(path.parent, (when, when))


def test_a_finished_asset_removes_its_own_shard_reports_and_old_failed_runs(
    tmp_path: Path,
) -> None:
    root = tmp_path / "shard-reports"
    _touch_tree(root / "run-a" / "scrape.scrape_plan")
    _touch_tree(root / "run-a" / "scrape.scrape_shard[shard_0]")
    _touch_tree(root / "run-a" / "scrape.scrape_shard[shard_1]")
    # Another asset of the same run (still running) and an asset named alike keep theirs.
    _touch_tree(root / "run-a" / "word_count.word_count_plan")
    _touch_tree(root / "run-a" / "my_scrape.my_scrape_shard[shard_0]")
    _touch_tree(root / "run-old" / "scrape.scrape_plan", age_seconds=8 * 24 * 3600)
    _touch_tree(root / "run-recent-failed" / "scrape.scrape_plan", age_seconds=3600)

    removed = remove_shard_reports(root, "run-a", ["scrape_plan", "scrape_shard"])

    assert removed == 4
    assert sorted(p.name for p in (root / "run-a").iterdir()) == [
        "my_scrape.my_scrape_shard[shard_0]",
        "word_count.word_count_plan",
    ]
    assert sorted(p.name for p in root.iterdir()) == ["run-a", "run-recent-failed"]

    removed = remove_shard_reports(root, "run-a", ["word_count_plan", "my_scrape_shard"])
    assert removed == 2 and not (root / "run-a").exists()
    assert remove_shard_reports(tmp_path / "none", "run-a", ["scrape_plan"]) == 0
