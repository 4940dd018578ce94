"""Fixtures of the UI tests: temp homes, `dagster dev` on them, and a page of headless Chromium.

Chromium is Debian's `/usr/bin/chromium`, never a browser Playwright downloads (no internet).
Without it or the `playwright` package these tests skip, or fail when
`SCRAPEFLOW_REQUIRE_SERVICES=1` (CI, where `.ci/run` installs Chromium).
"""

import importlib.util
import json
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from scrapeflow_dagster.engine.state.layout import DATA_DIR_ENV, DataLayout
from scrapeflow_dagster_tests.support.paths import BIN_DIR
from scrapeflow_dagster_tests.support.ports import free_port
from scrapeflow_dagster_tests.support.processes import (
    init_dagster_home,
    process_env,
    stop_group,
    wait_until,
)
from scrapeflow_dagster_tests.support.required import skip_or_fail

if TYPE_CHECKING:
    from playwright.sync_api import Page

CHROMIUM = Path("/usr/bin/chromium")
# As root in a container: no sandbox; without the background-networking flags Chromium's own
# connections (updates, sync, QUIC probes) get refused and page loads stall.
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)
# The "Join the Dagster community" dialog of a fresh home would cover the pages.
NO_NUX_YAML = "nux:\n  enabled: false\n"
STARTUP_TIMEOUT_SECONDS = 120.0
UI_TIMEOUT_MS = 30_000
ASSET_READY_QUERY = '{ assetNodeOrError(assetKey: {path: ["scrape"]}) { __typename } }'


def missing_browser() -> str | None:
    """What the UI tests lack to run (Chromium, Playwright), or None."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (apt-get install -y chromium)"
    if importlib.util.find_spec("playwright") is None:
        return "the playwright package is missing (pip install -e '.[dev]')"
    return None


@pytest.fixture(autouse=True)
def browser_available() -> None:
    """Skip (fail under `SCRAPEFLOW_REQUIRE_SERVICES=1`) before any setup when one is missing."""
    missing = missing_browser()
    if missing is not None:
        skip_or_fail(missing, "UI test")


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, DataLayout]:
    """A temp `DAGSTER_HOME` (no welcome dialog) and data folder, named in this process too."""
    home = init_dagster_home(tmp_path / "dagster_home")
    with (home / "dagster.yaml").open("a") as config:
        config.write(NO_NUX_YAML)
    layout = DataLayout(tmp_path / "data").ensure()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv(DATA_DIR_ENV, str(layout.root))
    return home, layout


def _asset_loaded(url: str) -> bool:
    body = json.dumps({"query": ASSET_READY_QUERY}).encode()
    request = urllib.request.Request(
        f"{url}/graphql", data=body, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            answer = json.loads(response.read())
    except (urllib.error.URLError, OSError):
        return False
    node = (answer.get("data") or {}).get("assetNodeOrError") or {}
    return node.get("__typename") == "AssetNode"


@pytest.fixture
def dagster_dev(homes: tuple[Path, DataLayout], tmp_path: Path) -> Iterator[str]:
    """`dagster dev` on the temp homes, once it serves the `scrape` asset; yields its URL."""
    home, layout = homes
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = tmp_path / "dagster-dev.log"
    command = [str(BIN_DIR / "dagster"), "dev", "-h", "127.0.0.1", "-p", str(port)]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [*command, "-m", "scrapeflow_dagster.definitions"],
            cwd=tmp_path,
            env=process_env(home, layout.root),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until(
            lambda: _asset_loaded(url),
            what="dagster dev to serve the scrape asset",
            timeout_seconds=STARTUP_TIMEOUT_SECONDS,
            poll_seconds=0.5,
            process=process,
            log_tail=lambda: log_path.read_text(errors="replace")[-4000:],
        )
        yield url
    finally:
        stop_group(process)  # dagster dev and everything it started


@pytest.fixture
def page(tmp_path: Path) -> Iterator["Page"]:
    """A page of headless Debian Chromium on a fresh profile, 1600x1000."""
    from playwright.sync_api import expect, sync_playwright  # here: it may be missing

    expect.set_options(timeout=UI_TIMEOUT_MS)  # the pages fill in from GraphQL after loading
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            tmp_path / "chromium-profile",
            executable_path=str(CHROMIUM),
            headless=True,
            args=list(CHROMIUM_ARGS),
            viewport={"width": 1600, "height": 1000},
        )
        try:
            browser_page = context.new_page()
            browser_page.set_default_timeout(UI_TIMEOUT_MS)
            yield browser_page
        finally:
            context.close()
