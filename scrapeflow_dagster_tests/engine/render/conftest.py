"""The render tests need Debian's Chromium and Playwright: skipped without them, saying so,
unless `SCRAPEFLOW_REQUIRE_SERVICES=1` (CI), where that is a failure."""

import os

import pytest

from scrapeflow_dagster_tests.ui.conftest import REQUIRE_SERVICES_ENV, missing_browser


@pytest.fixture(autouse=True)
def browser_available() -> None:
    """Skip (fail in CI) before any setup when the browser or its driver is missing."""
    missing = missing_browser()
    if missing is None:
        return
    if os.environ.get(REQUIRE_SERVICES_ENV) == "1":
        pytest.fail(f"{missing}, and {REQUIRE_SERVICES_ENV}=1 requires it")
    pytest.skip(missing)
