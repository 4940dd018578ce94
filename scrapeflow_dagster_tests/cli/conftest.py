"""Fixtures of the CLI tests: the `scrapeflow` and `dagster` executables of the venv run as real
processes on a temp `DAGSTER_HOME` and data folder, the bundled site served from a thread."""

import subprocess
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import dagster as dg
import pytest

from scrapeflow_dagster.engine.state.layout import DATA_DIR_ENV, DataLayout
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.cli.helpers import Run
from scrapeflow_dagster_tests.support.paths import BIN_DIR
from scrapeflow_dagster_tests.support.processes import init_dagster_home, process_env

for _category in (dg.BetaWarning, dg.PreviewWarning):  # the asset decorators' beta notices
    warnings.filterwarnings("ignore", category=_category)


@pytest.fixture
def site_thread() -> Iterator[SiteThread]:
    """The bundled site on a free 127.0.0.1 port, in a thread of this process."""
    with SiteThread(pages=100, page_bytes=2000) as running:
        yield running


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, DataLayout]:
    """The commands' temp `DAGSTER_HOME` and data folder, named in this process's environment
    too: its Dagster instance and engine calls see what the commands wrote."""
    home, layout = init_dagster_home(tmp_path / "dagster_home"), DataLayout(tmp_path / "data")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv(DATA_DIR_ENV, str(layout.root))
    return home, layout.ensure()


@pytest.fixture
def dagster_home(homes: tuple[Path, DataLayout]) -> Path:
    """The commands' `DAGSTER_HOME` (SQLite storage, telemetry off)."""
    return homes[0]


@pytest.fixture
def layout(homes: tuple[Path, DataLayout]) -> DataLayout:
    """The commands' data folder (`$SCRAPEFLOW_DATA_DIR`), created."""
    return homes[1]


@pytest.fixture
def run_command(dagster_home: Path, layout: DataLayout, tmp_path: Path) -> Run:
    """`run("scrapeflow", *args)` / `run("dagster", *args)` with the temp homes, from tmp_path;
    output captured as text."""
    env = process_env(dagster_home, layout.root)

    def run(program: str, *args: str, timeout_seconds: float = 120) -> subprocess.CompletedProcess:
        executable = BIN_DIR / program
        assert executable.exists(), f"{executable} is not installed (pip install -e .)"
        return subprocess.run(
            [str(executable), *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_seconds,
        )

    return run


@pytest.fixture
def cli_instance(dagster_home: Path) -> Iterator[Callable[[], dg.DagsterInstance]]:
    """Opens the instance of the temp `DAGSTER_HOME` (fresh each call: other processes write)."""
    opened: list[dg.DagsterInstance] = []

    def get() -> dg.DagsterInstance:
        opened.append(dg.DagsterInstance.get())
        return opened[-1]

    yield get
    for instance in opened:
        instance.dispose()
