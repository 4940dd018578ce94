"""Dagster's migration scripts are read once per process (`storage.migration_scripts`), and the
databases a process makes with them are the ones stock Dagster makes."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from alembic.config import Config
from alembic.script import ScriptDirectory

import scrapeflow_dagster.storage.batches.buffer  # noqa: F401  (keeps Dagster's migrations, as any use does)
from scrapeflow_dagster.storage.dagster_internals.migration_scripts import dagster_migration_reads
from scrapeflow_dagster_tests.storage.homes import REPO_ROOT, write_home
from scrapeflow_dagster_tests.storage.snapshot import schema

# A new home's instance and one in-process run of a partitioned asset: every database Dagster
# makes (runs, schedules, the index shard, the run's shard). Then what the process read.
MAKE_HOME = """
import json, sys
import dagster as dg
{before}
from scrapeflow_dagster_tests.storage.partitioned_defs import flaky, keys_partitions_def
with dg.DagsterInstance.get() as instance:
    instance.add_dynamic_partitions(keys_partitions_def.name, ["k1"])
    dg.materialize([flaky], instance=instance, partition_key="k1", raise_on_error=False)
    run_id = instance.get_runs()[0].run_id
{after}
print(json.dumps({{"run_id": run_id, "reads": reads}}))
"""
OURS = (
    "import scrapeflow_dagster.storage.batches.buffer",
    "from scrapeflow_dagster.storage.dagster_internals.migration_scripts import "
    "dagster_migration_reads\n"
    "reads = dagster_migration_reads()",
)
# Nothing of ours imported: Dagster and alembic as they come.
STOCK = ("", "reads = None")


def make_home(home: Path, ours: bool) -> dict[str, Any]:
    before, after = OURS if ours else STOCK
    code = MAKE_HOME.format(before=before, after=after)
    env = {**os.environ, "DAGSTER_HOME": str(home), "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_a_new_home_reads_dagsters_migrations_once_and_gets_stocks_databases(
    tmp_path: Path,
) -> None:
    stock_home, our_home = tmp_path / "stock", tmp_path / "ours"
    write_home(stock_home, batched=False)
    write_home(our_home, batched=False)  # stock storages: only the reading of scripts differs
    stock, ours = make_home(stock_home, ours=False), make_home(our_home, ours=True)
    asked, built = ours["reads"]
    # runs, schedules, index shard, run shard: a check each and a stamp each (all new).
    assert asked >= 8
    assert built == 1
    for name in ("history/runs.db", "schedules/schedules.db", "history/runs/index.db"):
        assert schema(our_home / name) == schema(stock_home / name), name
    assert schema(our_home / "history" / "runs" / f"{ours['run_id']}.db") == schema(
        stock_home / "history" / "runs" / f"{stock['run_id']}.db"
    )
    assert schema(our_home / "history/runs.db")["revision"] != []


def test_other_migrations_are_read_by_alembic_each_time(tmp_path: Path) -> None:
    scripts = tmp_path / "migrations"
    (scripts / "versions").mkdir(parents=True)
    (scripts / "env.py").write_text("")
    (scripts / "versions" / "0001_first.py").write_text(
        'revision = "0001"\ndown_revision = None\nbranch_labels = None\ndepends_on = None\n'
    )
    config = Config()
    config.set_main_option("script_location", str(scripts))
    asked_before = dagster_migration_reads()[0]
    first, second = ScriptDirectory.from_config(config), ScriptDirectory.from_config(config)
    assert first is not second
    assert first.get_current_head() == second.get_current_head() == "0001"
    assert dagster_migration_reads()[0] == asked_before
