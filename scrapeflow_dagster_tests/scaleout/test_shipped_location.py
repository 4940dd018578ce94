"""The shipped code location shards its executor assets on a machine with several cores unless
`SCRAPEFLOW_SHARDS=1`, and runs steps on Celery when the Dagster home records a broker (or the
environment names one) when the definitions load; a broker for a SQLite home is refused, naming
the home."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scrapeflow_dagster.broker import record_broker
from scrapeflow_dagster.instance import dagster_yaml
from scrapeflow_dagster_tests.support.paths import REPO_ROOT

PROBE = """
import json, dagster as dg
from scrapeflow_dagster.definitions import defs
dg.Definitions.validate_loadable(defs)
repo = defs.get_repository_def()
scrape = repo.assets_defs_by_key[dg.AssetKey("scrape")]
print(json.dumps({
    "ops": sorted(op.name for op in scrape.node_def.iterate_node_defs()),
    "executor": defs.executor.name if defs.executor else None,
    "default_config": (
        field.default_value
        if defs.executor and (field := defs.executor.config_schema.as_field()).default_provided
        else None
    ),
    "resources": sorted(repo.get_top_level_resources()),
}))
"""


def probe(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SCRAPEFLOW_") and k != "DAGSTER_HOME"
    }
    return subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**clean, **env},
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def load(**env: str) -> dict:
    done = probe(**env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


# Dagster's default executor (same name and config schema), step processes forked from a
# server that preloaded the code location.
LOCAL = "multi_or_in_process_executor"


@pytest.mark.parametrize(
    ("env", "sharded", "executor"),
    [
        ({}, (os.cpu_count() or 1) > 1, LOCAL),
        ({"SCRAPEFLOW_SHARDS": "1"}, False, LOCAL),
        ({"SCRAPEFLOW_SHARDS": "2"}, True, LOCAL),
        ({"SCRAPEFLOW_CELERY_BROKER": "redis://127.0.0.1:6379/9"}, True, "scrapeflow_celery"),
    ],
)
def test_sharding_and_celery_follow_the_environment(
    env: dict[str, str], sharded: bool, executor: str | None
) -> None:
    found = load(**env)

    # The executor assets are one chain step (a graph of plan, shards and collect when
    # sharded), whatever asset it is looked up by.
    chain = "executor_chain"
    expected_ops = (
        [chain, f"{chain}_collect", f"{chain}_plan", f"{chain}_shard"] if sharded else [chain]
    )
    assert found["ops"] == expected_ops
    assert found["executor"] == executor
    if executor == LOCAL:
        forkserver = found["default_config"]["multiprocess"]["start_method"]["forkserver"]
        # The server imports the location once; each step is forked from it with it loaded
        # (Dagster preloads only its executor module once a forkserver config is given).
        assert forkserver["preload_modules"][0] == "dagster"
        assert "scrapeflow_dagster.definitions" in forkserver["preload_modules"]
    # Present either way (unused when unsharded): user chains may mix both kinds of asset.
    assert {"shard_settings", "shard_io_manager"} <= set(found["resources"])


def test_the_executor_follows_the_home_not_the_folder(tmp_path: Path) -> None:
    shared = tmp_path / "shared-home"
    shared.mkdir()
    (shared / "dagster.yaml").write_text(
        "storage:\n  postgres:\n    postgres_url: postgresql+psycopg2://postgres@127.0.0.1/x\n"
    )
    record_broker(shared, "redis://127.0.0.1:6379/9")
    embedded = tmp_path / "embedded-home"
    embedded.mkdir()
    (embedded / "dagster.yaml").write_text(dagster_yaml(embedded))

    # The home that records a broker runs on Celery; another home, from the same folder, not.
    assert load(DAGSTER_HOME=str(shared))["executor"] == "scrapeflow_celery"
    assert load(DAGSTER_HOME=str(embedded), SCRAPEFLOW_SHARDS="1")["executor"] == LOCAL
    # A broker left in the environment (a .env line) for a SQLite home is refused by name.
    refused = probe(DAGSTER_HOME=str(embedded), SCRAPEFLOW_CELERY_BROKER="redis://127.0.0.1:6379/9")
    assert refused.returncode != 0
    assert f"the Dagster home {embedded} keeps runs and events in SQLite" in refused.stderr
