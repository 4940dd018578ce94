"""The render tests need a Chromium (`render_chromium_path: auto` finds Debian's headless shell
or its Chromium): skipped without one, saying so, unless `SCRAPEFLOW_REQUIRE_SERVICES=1` (CI),
where that is a failure."""

import pytest

from scrapeflow_dagster.engine.render.browser import browser_missing
from scrapeflow_dagster_tests.support.required import skip_or_fail


@pytest.fixture(autouse=True)
def browser_available() -> None:
    """Skip (fail under `SCRAPEFLOW_REQUIRE_SERVICES=1`) before any setup when none is here."""
    missing = browser_missing()
    if missing is not None:
        skip_or_fail(missing, "render test")
