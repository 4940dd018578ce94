"""`docs/configuration.md` cannot drift from the code: every field of every resource the code
location builds has a row with its default, and every environment variable the package reads
is listed; every relative link of the README and the docs resolves."""

import re
from pathlib import Path

import pytest

from scrapeflow_dagster.defs.factory import default_resources
from scrapeflow_dagster_tests.support.paths import REPO_ROOT

DOC = REPO_ROOT / "docs" / "configuration.md"
PACKAGE = REPO_ROOT / "scrapeflow_dagster"
ENV_NAME = re.compile(r"\b(?:SCRAPEFLOW_[A-Z_]+|WEBSHARE_API_KEY|IPROYAL_[A-Z_]+)\b")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def field_rows(text: str) -> dict[str, dict[str, str]]:
    """`{resource key: {field: default cell}}` from the doc's tables."""
    rows: dict[str, dict[str, str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("## "):
            heading = re.match(r"## `(\w+)`", line)
            current = rows.setdefault(heading.group(1), {}) if heading else None
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if current is not None and len(cells) >= 3 and cells[0].startswith("`"):
            current[cells[0].strip("`")] = cells[1].strip("`")
    return rows


def test_every_resource_field_has_a_row_with_its_default() -> None:
    rows = field_rows(DOC.read_text())
    for key, resource in default_resources().items():
        documented = rows.get(key)
        assert documented is not None, f"docs/configuration.md has no section for {key}"
        cls = type(resource)
        for name, info in cls.model_fields.items():
            assert name in documented, f"{key}.{name} is not in docs/configuration.md"
            default = info.default_factory() if info.default_factory else info.default  # type: ignore[call-arg]
            assert documented[name] == repr(default) or documented[name] == str(default), (
                f"{key}.{name}: the doc says {documented[name]!r}, the code {default!r}"
            )
        assert set(documented) == set(cls.model_fields), f"{key}: rows for fields that are gone"


def test_every_environment_variable_the_package_reads_is_documented() -> None:
    text = DOC.read_text()
    read = {
        name
        for path in PACKAGE.rglob("*.py")
        for name in ENV_NAME.findall(path.read_text())
        if not name.endswith("_")
    }
    missing = sorted(name for name in read if f"`{name}`" not in text)
    assert not missing, f"not in docs/configuration.md: {missing}"


@pytest.mark.parametrize(
    "doc", [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))], ids=str
)
def test_every_relative_link_resolves(doc: Path) -> None:
    broken = []
    for target in LINK.findall(doc.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (doc.parent / target.split("#", 1)[0]).resolve()
        if not path.exists():
            broken.append(target)
    assert not broken, f"{doc.name}: links that resolve to nothing: {broken}"
