"""The packages of `scrapeflow_dagster` stand on floors that only look down, as each package's
`__init__` docstring says (`STAGE_IMPORTS` in test_definitions.py holds the same one level
below, for the engine's stages); the import paths users and the docs name keep working."""

import ast
import importlib
import re
from pathlib import Path

import pytest

from scrapeflow_dagster_tests.support.paths import REPO_ROOT

PACKAGE_DIR = REPO_ROOT / "scrapeflow_dagster"

# What each package (or top-level module) may import besides itself, bottom floor first: a
# package imports only from floors below its own, never from a sibling on the same floor.
PACKAGE_FLOORS: list[dict[str, set[str]]] = [
    {"engine": set(), "site": set(), "__init__": set()},
    # Its docstring says "nothing from the engine", but `sqlite_shards` takes `process_alive`.
    {"storage": {"engine"}},
    {"instance": set(), "broker": set()},  # the Dagster home
    {"lib": {"engine", "storage", "instance", "broker"}},
    {"scaleout": {"engine", "storage", "instance", "broker", "lib"}},
    {"dagster_cli": {"broker", "scaleout"}},
    {
        "crawling": {"engine", "instance", "broker", "lib", "scaleout", "dagster_cli"},
        "defs": {"engine", "storage", "instance", "broker", "lib", "scaleout"},
    },
    {
        "definitions": {"defs", "scaleout"},
        "demo": {"engine", "instance", "dagster_cli", "defs"},
    },
    {
        "cli": {
            "engine",
            "site",
            "storage",
            "instance",
            "broker",
            "lib",
            "scaleout",
            "dagster_cli",
            "crawling",
            "defs",
            "demo",
        },
    },
]
MAY_IMPORT = {name: allowed for floor in PACKAGE_FLOORS for name, allowed in floor.items()}
FLOOR_OF = {name: level for level, floor in enumerate(PACKAGE_FLOORS) for name in floor}

# Import paths that users' code, `workspace.yaml`, homes' `dagster.yaml` (before 0.2.0) or the
# docs name (a location of your own).
KEPT_PATHS = {
    "scrapeflow_dagster.storage.sqlite_batched": "BatchedSqliteEventLogStorage",
    "scrapeflow_dagster.storage.postgres_batched": "BatchedPostgresEventLogStorage",
    "scrapeflow_dagster.definitions": "defs",
    "scrapeflow_dagster.defs.assets": "executor_assets",
    "scrapeflow_dagster.defs.executor_assets": "executor_asset",
    "scrapeflow_dagster.defs.factory": "scrapeflow_definitions",
    "scrapeflow_dagster.defs.resources": "ScrapeSettingsResource",
}
DOC_IMPORT = re.compile(r"^\s*from (scrapeflow_dagster[\w.]*) import ([\w, ]+)", re.M)


def _package_of(path: Path) -> str:
    """The top-level package (or module, `.py` dropped) of `path` under scrapeflow_dagster."""
    return path.relative_to(PACKAGE_DIR).parts[0].removesuffix(".py")


def _our_imports(path: Path) -> set[str]:
    """The top-level packages of scrapeflow_dagster that `path` imports, anywhere in it
    (imports inside functions and under `TYPE_CHECKING` included)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{path}: a relative import"
            if node.module == "scrapeflow_dagster":  # `from scrapeflow_dagster import cli`
                names.update(f"scrapeflow_dagster.{alias.name}" for alias in node.names)
            else:
                names.add(node.module)
    return {name.split(".")[1] for name in names if name.startswith("scrapeflow_dagster.")}


def test_the_floors_only_look_down() -> None:
    upward = {
        name: sorted(other for other in allowed if FLOOR_OF[other] >= FLOOR_OF[name])
        for name, allowed in MAY_IMPORT.items()
    }
    assert {name: others for name, others in upward.items() if others} == {}


def test_every_package_has_a_floor() -> None:
    found = {_package_of(path) for path in PACKAGE_DIR.rglob("*.py")}
    assert found == set(MAY_IMPORT), "a package was added or removed: update PACKAGE_FLOORS"


def test_each_package_imports_only_from_the_floors_below() -> None:
    files = sorted(PACKAGE_DIR.rglob("*.py"))
    assert len(files) > 100, f"sources not found under {PACKAGE_DIR}"
    found = {}
    for path in files:
        package = _package_of(path)
        extra = _our_imports(path) - MAY_IMPORT[package] - {package}
        if extra:
            found[str(path.relative_to(REPO_ROOT))] = sorted(extra)
    assert found == {}


@pytest.mark.parametrize(("module", "name"), sorted(KEPT_PATHS.items()))
def test_the_import_paths_users_know_still_work(module: str, name: str) -> None:
    assert hasattr(importlib.import_module(module), name)


def test_the_imports_the_docs_show_still_work() -> None:
    pages = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
    shown = [
        (page.name, module, name.strip())
        for page in pages
        for module, names in DOC_IMPORT.findall(page.read_text())
        for name in names.split(",")
        if name.strip()
    ]
    assert len(shown) >= 3, "the docs show no import of scrapeflow_dagster any more"
    missing = [
        f"{page}: from {module} import {name}"
        for page, module, name in shown
        if not hasattr(importlib.import_module(module), name)
    ]
    assert missing == []
