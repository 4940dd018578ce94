"""Homes for the retention tests: the shipped chain (`scrape`, `validation`, `pages`) run with
the real `dagster asset materialize` over tasks on the bundled site, some of them failing, and
everything Dagster and the UI read back about it (`reads`), to compare before and after a
prune."""

import json
import re
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import dagster as dg
import sqlalchemy as db
from dagster._core.events import DagsterEventType

from scrapeflow_dagster.dagster_cli import materialize_range_command
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.instance import dagster_yaml
from scrapeflow_dagster.lib.partitions import (
    TASKS_PARTITIONS_NAME,
    add_task_partitions,
    tasks_partitions_def,
)
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster.storage.batches.lean_writes import LeanWrites, lean_writes_yaml
from scrapeflow_dagster.storage.retention.prune import RetentionPolicy, retention_yaml
from scrapeflow_dagster_tests.storage.homes import instance_of
from scrapeflow_dagster_tests.support.graphql import ui_partition_health
from scrapeflow_dagster_tests.support.processes import process_env
from scrapeflow_dagster_tests.support.tasks import store_tasks

RUN_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
ASSETS = ("scrape", "validation", "pages")
RECORDS_LIMIT = 10_000  # Dagster refuses more per call
# Fast retries; one shard, in one process: the fastest chain run there is.
FAST = {
    "resources": {
        "scrape_settings": {"config": {"max_attempts": 1, "backoff_base_seconds": 0.01}},
    }
}
FORCED = {**FAST, "ops": {"executor_chain": {"config": {"force": True}}}}
# One task at a time: two homes given the same runs store the same events in the same order.
ONE_AT_A_TIME = {"scrape_settings": {"config": {"max_attempts": 1, "max_parallelism": 1}}}
CLI_TIMEOUT_SECONDS = 300.0


def write_chain_home(
    home: Path,
    *,
    policy: RetentionPolicy | None = None,
    postgres_url: str | None = None,
    lean: LeanWrites | None = None,
) -> Path:
    """The home `scrapeflow home init [--retention]` writes, SQLite or Postgres (with a
    `lean_writes:` block when `lean` is given; else its defaults apply)."""
    home.mkdir(parents=True)
    text = dagster_yaml(home, postgres=postgres_url)
    marker = "EventLogStorage\n  config:\n"
    assert marker in text
    if policy is not None:
        text = text.replace(marker, marker + retention_yaml(policy), 1)
    if lean is not None:
        text = text.replace(marker, marker + lean_writes_yaml(lean), 1)
    (home / "dagster.yaml").write_text(text)
    return home


def task_rows(site: SiteThread, count: int, *, tag: str = "") -> list[tuple[str, str]]:
    """`count` tasks: pages, with a 404 (fails `scrape`) in every 10, a captcha page (fails
    `validation`) in every 15, and in every 20 a page that turns into a 404 once
    `turn_to_failures(site, keys, tag)` is called (named by `tag`: one site serves many homes).
    """
    rows = []
    for n in range(count):
        if n % 20 == 11:
            rows.append((f"t-{n:03d}-turns", site.url(f"/flaky/{tag}turns-{n}?fail=0&code=404")))
        elif n % 10 == 3:
            rows.append((f"t-{n:03d}-missing", site.url(f"/status/404?n={n}")))
        elif n % 15 == 8:
            rows.append((f"t-{n:03d}-captcha", site.url(f"/captcha?n={n}")))
        else:
            rows.append((f"t-{n:03d}-page", site.url(f"/page/{n}")))
    return rows


def turn_to_failures(site: SiteThread, keys: list[str], tag: str = "") -> list[str]:
    """Make the `turns` tasks among `keys` fail from now on; returns their keys."""
    turned = [key for key in keys if key.endswith("-turns")]
    for key in turned:
        number = int(key.split("-")[1])
        control = site.url(f"/control/flaky/{tag}turns-{number}?fail=-1")
        with urllib.request.urlopen(urllib.request.Request(control, method="POST"), timeout=5):
            pass
    return turned


class ChainHome:
    """A Dagster home and data folder with tasks stored and added as partitions."""

    def __init__(self, home: Path, data: Path, rows: list[tuple[str, str]]) -> None:
        self.home = home
        self.layout = DataLayout(data).ensure()
        self.keys = store_tasks(self.layout, rows)
        with instance_of(home) as instance:
            add_task_partitions(instance, self.keys)

    def run_command(self, *, forced: bool, one_at_a_time: bool = False) -> list[str]:
        """The `dagster asset materialize` of one chain run over every task (a forced refresh
        when `forced`; one task at a time when `one_at_a_time`)."""
        config = dict(FORCED if forced else FAST)
        if one_at_a_time:
            config["resources"] = ONE_AT_A_TIME
        return materialize_range_command(
            ",".join(ASSETS), self.keys[0], self.keys[-1], config_json=json.dumps(config)
        )

    def env(self, *, one_at_a_time: bool = False) -> dict[str, str]:
        """The environment of a CLI process on this home (a fixed hash seed when
        `one_at_a_time`: a run's planned rows come in the order of a set of partition keys)."""
        env = process_env(self.home, self.layout.root)
        if one_at_a_time:
            env["PYTHONHASHSEED"] = "0"
        return env

    def run(
        self, *, forced: bool, cwd: Path, one_at_a_time: bool = False
    ) -> subprocess.CompletedProcess[str]:
        """One chain run over every task (`run_command`), from `cwd`."""
        done = subprocess.run(
            self.run_command(forced=forced, one_at_a_time=one_at_a_time),
            env=self.env(one_at_a_time=one_at_a_time),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT_SECONDS,
        )
        assert done.returncode in (0, 1), (done.stdout + done.stderr)[-4000:]
        assert "Traceback" not in done.stdout, done.stdout[-4000:]
        return done


def _metadata(event: Any) -> list[tuple[str, Any]]:
    return sorted((name, repr(value.value)) for name, value in event.metadata.items())


def asset_reads(
    instance: dg.DagsterInstance, asset: str, keys: list[str], *, rebuild: bool
) -> dict[str, Any]:
    """What Dagster and the UI read about `asset`: states and the status cache (`rebuild`:
    built again from the rows), latest ids per partition, attempts, the UI partition detail."""
    key = dg.AssetKey(asset)
    storage = instance.event_log_storage
    if rebuild:
        storage.wipe_asset_cached_status(key)
    entry = instance.get_asset_records([key])[0].asset_entry
    out: dict[str, Any] = {"cache_before": repr(entry.cached_status)}
    states = instance.get_status_by_partition(key, keys, tasks_partitions_def) or {}
    out["states"] = {k: (s.value if s else None) for k, s in states.items()}
    entry = instance.get_asset_records([key])[0].asset_entry
    out["cache_after"] = repr(entry.cached_status)
    out["last_materialization_id"] = entry.last_materialization_storage_id
    out["last_run_id"] = entry.last_run_id
    materialization = DagsterEventType.ASSET_MATERIALIZATION
    # Mappings by partition in key order: their queries have no ORDER BY, and Postgres's plan
    # (its statistics, which retention's ANALYZE refreshes) decides the rows' order.
    out["latest_materialization_ids"] = dict(
        sorted(storage.get_latest_storage_id_by_partition(key, materialization).items())
    )
    out["latest_observation_ids"] = dict(
        sorted(
            storage.get_latest_storage_id_by_partition(
                key, DagsterEventType.ASSET_OBSERVATION
            ).items()
        )
    )
    out["attempts"] = dict(
        sorted(
            storage.get_latest_asset_partition_materialization_attempts_without_materializations(
                key
            ).items()
        )
    )
    out["materialized"] = sorted(instance.get_materialized_partitions(key))
    planned = instance.get_latest_planned_materialization_info(key)
    # The asset's latest run in the UI, and its id in the status cache's `latest_storage_id`.
    out["asset_latest_planned"] = (planned.storage_id, planned.run_id) if planned else None
    out["ui_health"] = {
        name: sorted(found) for name, found in ui_partition_health(instance, asset).items()
    }
    out["ui_detail"] = _ui_partition_detail(instance, key, keys)
    return out


def _ui_partition_detail(
    instance: dg.DagsterInstance, key: dg.AssetKey, keys: list[str]
) -> dict[str, Any]:
    """Per partition, what the UI's partition detail shows (webapp `AssetPartitionDetail`): the
    latest run when it is not the latest materialisation's, with its status; the latest
    materialisation's metadata; the failure reason (observations after it)."""
    latest: dict[str, Any] = {}
    for record in instance.fetch_materializations(key, limit=RECORDS_LIMIT, ascending=True).records:
        latest[str(record.partition_key)] = record
    observed: dict[str, Any] = {}
    for record in instance.fetch_observations(key, limit=RECORDS_LIMIT, ascending=True).records:
        observed[str(record.partition_key)] = record
    shown = {}
    for partition in keys:
        planned = instance.get_latest_planned_materialization_info(key, partition)
        done = latest.get(partition)
        run_id = planned.run_id if planned and (not done or planned.run_id != done.run_id) else None
        run = instance.get_run_by_id(run_id) if run_id else None
        seen = observed.get(partition)
        failure = (
            _metadata(seen.asset_observation)
            if seen and (not done or seen.storage_id > done.storage_id)
            else None
        )
        shown[partition] = {
            "run": run_id,
            "run_status": run.status.value if run else None,
            "materialization": done.storage_id if done else None,
            "metadata": _metadata(done.asset_materialization) if done else None,
            "failure": failure,
        }
    return shown


def history(instance: dg.DagsterInstance, asset: str) -> dict[int, Any]:
    """The asset's materialisations and observations as the UI's event history lists them, by
    storage id: kind, run, partition, metadata."""
    key = dg.AssetKey(asset)
    events = {}
    for record in instance.fetch_materializations(key, limit=RECORDS_LIMIT).records:
        event = record.asset_materialization
        events[record.storage_id] = ("m", record.run_id, record.partition_key, _metadata(event))
    for record in instance.fetch_observations(key, limit=RECORDS_LIMIT).records:
        observation = record.asset_observation
        events[record.storage_id] = (
            "o",
            record.run_id,
            record.partition_key,
            _metadata(observation),
        )
    return events


def reads(home: Path, keys: list[str], *, rebuild: bool = False) -> dict[str, Any]:
    """Every read above for the three assets, and the dynamic partitions."""
    with instance_of(home) as instance:
        return {
            "partitions": instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME),
            **{asset: asset_reads(instance, asset, keys, rebuild=rebuild) for asset in ASSETS},
        }


def histories(home: Path) -> dict[str, dict[int, Any]]:
    """`history` of the three assets."""
    with instance_of(home) as instance:
        return {asset: history(instance, asset) for asset in ASSETS}


def home_bytes(home: Path) -> int:
    """The size of the files of a home (SQLite: everything Dagster keeps)."""
    return sum(path.stat().st_size for path in home.rglob("*") if path.is_file())


def runs_named(home: Path, value: Any) -> Any:
    """`value` with each run id of `home` replaced by the run's position (oldest 0)."""
    with instance_of(home) as instance:
        position = {run.run_id: i for i, run in enumerate(reversed(instance.get_runs()))}
    text = RUN_ID.sub(lambda found: f"run-{position.get(found.group(0), '?')}", repr(value))
    assert "run-?" not in text
    return text


def leave_deleted_planned_rows(conn: db.Connection, copies: int) -> None:
    """What a large run's planned rows leave in a Postgres event log: `copies` copies of each
    planned row inserted, then deleted, so their entries are dead on every index page they
    filled (`conn` in autocommit)."""
    conn.execute(
        db.text(
            "INSERT INTO event_logs (run_id, event, dagster_event_type, timestamp,"
            " step_key, asset_key, partition)"
            " SELECT run_id, event, dagster_event_type, timestamp, step_key, asset_key,"
            " partition || '~copy-' || g FROM event_logs"
            " CROSS JOIN generate_series(1, :copies) AS g"
            " WHERE dagster_event_type = 'ASSET_MATERIALIZATION_PLANNED'"
        ),
        {"copies": copies},
    )
    conn.execute(db.text("DELETE FROM event_logs WHERE partition LIKE '%~copy-%'"))
