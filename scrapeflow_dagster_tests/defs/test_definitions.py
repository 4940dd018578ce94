"""The code location loads, for Dagster in this process and for the `dagster` CLI; the engine
stays free of Dagster."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from scrapeflow_dagster.definitions import defs
from scrapeflow_dagster.defs.automation import INTERVAL_ENV
from scrapeflow_dagster_tests.support.paths import BIN_DIR, COMMAND_CWD, REPO_ROOT

ENGINE_DIR = REPO_ROOT / "scrapeflow_dagster" / "engine"


def graph_is_unpartitioned(repo: dg.RepositoryDefinition, name: str) -> bool:
    return repo.asset_graph.get(dg.AssetKey(name)).partitions_def is None


def test_definitions_resolve_with_assets_sensors_schedule() -> None:
    dg.Definitions.validate_loadable(defs)
    repo = defs.get_repository_def()

    all_assets = {key.to_user_string() for key in repo.asset_graph.get_all_asset_keys()}
    assert all_assets == {"scrape", "validation", "pages", "crawl_report", "changes_report"}
    assets = all_assets - {"crawl_report", "changes_report"}  # the executor assets
    assert {s.name for s in repo.sensor_defs} == {
        "inbox_sensor",
        "retry_sensor",
        "frontier_sensor",
        "retention_sensor",
    }
    assert {s.name for s in repo.schedule_defs} == {
        "refresh_schedule",
        "crawl_report_schedule",
        "changes_report_schedule",
    }
    assert set(repo.get_top_level_resources()) >= {
        "scrape_settings",
        "status_store",
        "proxy_provider",
        "automation_settings",
    }
    assert graph_is_unpartitioned(repo, "crawl_report")
    assert graph_is_unpartitioned(repo, "changes_report")
    graph = repo.asset_graph
    assert graph.get(dg.AssetKey("validation")).parent_keys == {dg.AssetKey("scrape")}
    assert graph.get(dg.AssetKey("pages")).parent_keys == {
        dg.AssetKey("scrape"),
        dg.AssetKey("validation"),
    }
    for name in assets:
        node = graph.get(dg.AssetKey(name))
        assert node.partitions_def is not None
        assert node.backfill_policy == dg.BackfillPolicy.single_run()


def validate_workspace(env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`dagster definitions validate -w workspace.yaml`, from a folder without a `.env`."""
    command = [str(BIN_DIR / "dagster"), "definitions", "validate"]
    return subprocess.run(
        [*command, "-w", str(REPO_ROOT / "workspace.yaml")],
        cwd=COMMAND_CWD,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_dagster_cli_validates_the_workspace() -> None:
    done = validate_workspace()
    assert done.returncode == 0, done.stdout + done.stderr


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_engine_never_imports_dagster() -> None:
    files = sorted(ENGINE_DIR.rglob("*.py"))
    assert len(files) > 10, f"engine sources not found under {ENGINE_DIR}"
    offenders = {
        str(path.relative_to(REPO_ROOT)): sorted(
            name
            for name in _imported_modules(path)
            if name.split(".")[0].startswith("dagster")
            or name.startswith("scrapeflow_dagster.defs")
        )
        for path in files
    }
    assert {path: names for path, names in offenders.items() if names} == {}


def test_engine_imports_without_dagster_loaded() -> None:
    # The same rule at run time: importing every engine module (every stage's too) never
    # pulls Dagster in.
    modules = sorted(
        "scrapeflow_dagster.engine." + ".".join(path.relative_to(ENGINE_DIR).with_suffix("").parts)
        for path in ENGINE_DIR.rglob("*.py")
        if path.stem != "__init__"
    )
    assert len(modules) > 20, modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0].startswith('dagster'))\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr


# What each stage of the engine may import, as its folder's `__init__` docstring says.
STAGE_IMPORTS = {
    "state": {"errors", "redact", "state"},
    "tasks": {"errors", "redact", "canonical", "state", "history", "tasks"},
    "retry": {"errors", "redact", "settings", "state", "retry"},
    "proxies": {"errors", "redact", "settings", "proxies"},
    "content": {"errors", "redact", "tasks", "content"},
    "history": {"errors", "redact", "canonical", "state", "history"},
    "polite": {"errors", "redact", "settings", "state", "tasks", "polite"},
    "run": {
        "errors",
        "redact",
        "settings",
        "state",
        "tasks",
        "proxies",
        "history",
        "polite",
        "gate",
        "render",
        "run",
    },
    "executors": {
        "errors",
        "redact",
        "settings",
        "state",
        "tasks",
        "retry",
        "polite",
        "run",
        "gate",
        "extract",
        "render",
        "revisit",
        "content",
        "executors",
    },
    "extract": {"state", "extract"},
    "revisit": {"errors", "settings", "state", "polite", "revisit"},
    "render": {"errors", "redact", "settings", "state", "run", "gate", "render"},
    "gate": {
        "errors",
        "redact",
        "settings",
        "state",
        "tasks",
        "retry",
        "polite",
        "proxies",
        "run",
        "crawl",
        "gate",
    },
    "crawl": {
        "errors",
        "redact",
        "settings",
        "state",
        "tasks",
        "history",
        "proxies",
        "polite",
        "run",
        "gate",
        "crawl",
    },
}


def test_each_engine_stage_imports_only_what_its_docstring_allows() -> None:
    stages = {p.name for p in ENGINE_DIR.iterdir() if (p / "__init__.py").exists()}
    assert stages == set(STAGE_IMPORTS), "a stage was added or removed: update STAGE_IMPORTS"
    found = {}
    for stage in sorted(stages):
        for path in sorted((ENGINE_DIR / stage).rglob("*.py")):
            used = {
                name.split(".")[2]
                for name in _imported_modules(path)
                if name.startswith("scrapeflow_dagster.engine.")
            }
            extra = used - STAGE_IMPORTS[stage]
            if extra:
                found[str(path.relative_to(REPO_ROOT))] = sorted(extra)
    assert found == {}


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        (INTERVAL_ENV, "30s", "must be a whole number of seconds >= 1, got '30s'"),
        ("SCRAPEFLOW_REFRESH_CRON", "bogus", "must be a cron schedule of 5 fields"),
        ("SCRAPEFLOW_REPORT_CRON", "*/30 * *", "must be a cron schedule of 5 fields"),
        ("SCRAPEFLOW_CHANGES_REPORT_CRON", "0 * *", "must be a cron schedule of 5 fields"),
    ],
)
def test_a_bad_deployment_variable_is_named_when_the_location_loads(
    name: str, value: str, said: str
) -> None:
    env = {**os.environ, name: value}
    done = validate_workspace(env)
    assert done.returncode != 0
    assert f"{name} {said}" in done.stdout + done.stderr
