"""The package installs only a Dagster the guard has verified: pip then takes one of them, and a
newer Dagster is a resolver conflict a user sees instead of a silent fallback to stock storage
(the home per task ~2.3 KB back to ~36 KB)."""

import tomllib

from packaging.requirements import Requirement
from packaging.version import Version

from scrapeflow_dagster.storage.dagster_internals.version_guard import VERIFIED
from scrapeflow_dagster_tests.support.paths import REPO_ROOT


def _requirements() -> dict[str, Requirement]:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    parsed = (Requirement(line) for line in project["dependencies"])
    return {requirement.name: requirement for requirement in parsed}


def _neighbours(version: str) -> tuple[str, str]:
    major, minor, patch = Version(version).release
    return f"{major}.{minor}.{patch - 1}", f"{major}.{minor}.{patch + 1}"


def test_the_dagster_pins_admit_exactly_the_verified_patches() -> None:
    requirements = _requirements()
    for name in ("dagster", "dagster-webserver"):
        specifier = requirements[name].specifier
        verified = sorted(VERIFIED[name], key=Version)
        assert all(specifier.contains(version) for version in verified), (name, specifier)
        below, _ = _neighbours(verified[0])
        _, above = _neighbours(verified[-1])
        assert not specifier.contains(below) and not specifier.contains(above), (name, specifier)
        # No unverified patch between the verified ones.
        low, high = Version(verified[0]), Version(verified[-1])
        between = [f"{low.major}.{low.minor}.{p}" for p in range(low.micro, high.micro + 1)]
        assert [v for v in between if specifier.contains(v)] == verified, (name, specifier)
