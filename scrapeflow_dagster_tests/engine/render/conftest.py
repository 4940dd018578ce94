"""The render tests need a Chromium (`render_chromium_path: auto` finds Debian's headless shell
or its Chromium): skipped without one, saying so, unless `SCRAPEFLOW_REQUIRE_SERVICES=1` (CI),
where that is a failure."""

import os

import pytest

from scrapeflow_dagster.engine.render.browser import browser_missing

REQUIRE_SERVICES_ENV = "SCRAPEFLOW_REQUIRE_SERVICES"


@pytest.fixture(autouse=True)
def browser_available() -> None:
    """Skip (fail under `SCRAPEFLOW_REQUIRE_SERVICES=1`) before any setup when none is here."""
    missing = browser_missing()
    if missing is None:
        return
    if os.environ.get(REQUIRE_SERVICES_ENV) == "1":
        pytest.fail(f"{missing}, and {REQUIRE_SERVICES_ENV}=1 requires it")
    pytest.skip(f"render test skipped: {missing}")
