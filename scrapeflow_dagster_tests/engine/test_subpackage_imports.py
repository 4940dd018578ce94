"""Inside a stage that has subpackages (`history`, `crawl`), each subpackage imports only the
siblings its `__init__` docstring allows; `STAGE_IMPORTS` (defs/test_definitions.py) holds the
same one level up, between the stages."""

import ast
from pathlib import Path

import pytest

from scrapeflow_dagster_tests.support.paths import REPO_ROOT

ENGINE_DIR = REPO_ROOT / "scrapeflow_dagster" / "engine"

# What each subpackage may import of its own stage besides itself, bottom first.
SIBLING_IMPORTS = {
    "history": {
        "database": set(),
        "markers": set(),
        "recording": {"database", "markers"},
        "from_status_files": {"database", "markers", "recording"},
        "counting": {"database", "markers", "recording", "from_status_files"},
        "reading": {"database", "recording"},
    },
    "crawl": {
        "scope": set(),
        "frontier": set(),
        "sitemaps": {"scope"},
        "discovery": {"scope", "frontier"},
        "seeding": {"frontier", "sitemaps"},
    },
}


def _siblings_imported(path: Path, stage: str) -> set[str]:
    prefix = f"scrapeflow_dagster.engine.{stage}."
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return {name.removeprefix(prefix).split(".")[0] for name in names if name.startswith(prefix)}


@pytest.mark.parametrize("stage", sorted(SIBLING_IMPORTS))
def test_each_subpackage_imports_only_the_siblings_its_docstring_allows(stage: str) -> None:
    folder = ENGINE_DIR / stage
    found_parts = {p.stem for p in folder.iterdir() if p.name != "__init__.py"}
    found_parts = {
        name
        for name in found_parts
        if (folder / name / "__init__.py").exists() or (folder / f"{name}.py").exists()
    }
    allowed = SIBLING_IMPORTS[stage]
    assert found_parts == set(allowed), "a subpackage was added or removed: update the table"
    extra = {}
    for part, may in allowed.items():
        paths = [folder / f"{part}.py"] if (folder / f"{part}.py").exists() else []
        paths += sorted((folder / part).rglob("*.py"))
        for path in paths:
            used = _siblings_imported(path, stage) - may - {part}
            if used:
                extra[str(path.relative_to(REPO_ROOT))] = sorted(used)
    assert extra == {}
