"""Fixtures of the reliability tier: temp homes on tmpfs, and a real SQLite Dagster instance on
them that the tests share with the `dagster` and `scrapeflow` processes they start.

Every test here is marked `reliability` (select with `-m reliability`, leave out with
`-m "not reliability"`); `make test` runs them with the rest.
"""

import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

from scrapeflow_dagster.engine.state.layout import DATA_DIR_ENV, DataLayout

# The advisory regressions' sites (`test_advisories*.py`), as fixtures of this folder.
from scrapeflow_dagster_tests.reliability.advisory_sites import (  # noqa: F401
    internal,
    listener,
    public,
)
from scrapeflow_dagster_tests.support.netns import public_host  # noqa: F401
from scrapeflow_dagster_tests.support.processes import (
    PROXY_ENV_NAMES,
    init_dagster_home,
    process_env,
)

_HERE = Path(__file__).parent
# Dagster's SQLite event log syncs every event to disk; on tmpfs a 2,000-partition CLI run takes
# a quarter of the time. The files are as real as on disk for everything tested here.
_TMPFS = Path("/dev/shm")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "reliability: crash, fault, bad-input, concurrency and secrets tests"
    )
    for category in ("dagster.BetaWarning", "dagster.PreviewWarning"):
        config.addinivalue_line("filterwarnings", f"ignore::{category}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.reliability)


@dataclass(frozen=True)
class Homes:
    """A Dagster home and a data folder for one test, and the environment naming them."""

    root: Path
    dagster_home: Path
    layout: DataLayout

    @property
    def data_dir(self) -> Path:
        return self.layout.root

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a child process on these homes."""
        return process_env(self.dagster_home, self.data_dir, **extra)


@pytest.fixture
def work_dir(tmp_path: Path) -> Iterator[Path]:
    """A fresh folder on tmpfs when there is one (else under `tmp_path`), removed afterwards."""
    if _TMPFS.is_dir() and shutil.disk_usage(_TMPFS).free > 2 << 30:
        path = Path(tempfile.mkdtemp(prefix="scrapeflow-reliability-", dir=_TMPFS))
    else:
        path = tmp_path / "work"
        path.mkdir()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def homes(work_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Homes:
    """`DAGSTER_HOME` (SQLite storage, telemetry off) and `SCRAPEFLOW_DATA_DIR`, also set here."""
    home = init_dagster_home(work_dir / "dagster_home")
    layout = DataLayout(work_dir / "data")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv(DATA_DIR_ENV, str(layout.root))
    for name in PROXY_ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    return Homes(work_dir, home, layout)


@pytest.fixture
def instance(homes: Homes) -> Iterator[dg.DagsterInstance]:
    """The real (SQLite) Dagster instance of `homes.dagster_home`, shared with child processes."""
    with dg.DagsterInstance.from_config(str(homes.dagster_home)) as real:
        yield real
