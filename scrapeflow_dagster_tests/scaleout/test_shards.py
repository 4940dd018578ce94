"""The pure parts of scaling out: how keys are split into shards, how many shards, and the
Celery settings both sides share (chosen from the environment, no broker URL stored)."""

import pytest

from scrapeflow_dagster.scaleout.celery import (
    CELERY_BROKER_ENV,
    VISIBILITY_TIMEOUT_ENV,
    celery_executor_config,
    executor_from_env,
)
from scrapeflow_dagster.scaleout.shards import ShardSettingsResource, split_keys
from scrapeflow_dagster.scaleout.worker import worker_command, worker_env


@pytest.mark.parametrize(("count", "shards"), [(1, 2), (7, 2), (10, 3), (200, 2), (5, 8)])
def test_shards_are_disjoint_sorted_slices_that_cover_every_key(count: int, shards: int) -> None:
    keys = [f"k-{n:04d}" for n in reversed(range(count))]
    slices = split_keys(keys, shards)
    assert [key for piece in slices for key in piece] == sorted(keys)
    assert len(slices) == min(shards, count)
    sizes = [len(piece) for piece in slices]
    assert max(sizes) - min(sizes) <= 1


def test_a_shard_count_below_one_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="shards must be at least 1, got 0"):
        split_keys(["a"], 0)
    with pytest.raises(ValueError, match="shard_settings.shards"):
        ShardSettingsResource(shards=-1).shard_count()


def test_zero_shards_means_one_per_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 6)
    assert ShardSettingsResource().shard_count() == 6
    assert ShardSettingsResource(shards=3).shard_count() == 3


def test_celery_is_chosen_by_the_broker_variable_and_its_url_is_never_stored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(CELERY_BROKER_ENV, raising=False)
    assert executor_from_env() is None
    secret_url = "redis://:s3cret@127.0.0.1:6379/0"
    monkeypatch.setenv(CELERY_BROKER_ENV, secret_url)
    monkeypatch.setenv(VISIBILITY_TIMEOUT_ENV, "40")
    executor = executor_from_env()
    assert executor is not None and executor.name == "scrapeflow_celery"
    config = celery_executor_config()
    assert config["broker"] == {"env": CELERY_BROKER_ENV}
    assert config["backend"] == {"env": CELERY_BROKER_ENV}
    assert "s3cret" not in repr(config)
    assert config["config_source"]["task_acks_late"] is True
    assert config["config_source"]["broker_transport_options"]["visibility_timeout"] == 40


def test_bad_worker_settings_are_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VISIBILITY_TIMEOUT_ENV, "soon")
    with pytest.raises(ValueError, match=VISIBILITY_TIMEOUT_ENV):
        celery_executor_config()
    with pytest.raises(ValueError, match="amqp://x"):
        worker_env("amqp://x")
    with pytest.raises(ValueError, match="concurrency"):
        worker_command(concurrency=0)
