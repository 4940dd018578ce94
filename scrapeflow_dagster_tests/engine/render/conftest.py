"""The render tests need Debian's Chromium and Playwright, as the UI tests do: skipped without
them, saying so, unless `SCRAPEFLOW_REQUIRE_SERVICES=1` (CI), where that is a failure."""

from scrapeflow_dagster_tests.ui.conftest import browser_available  # noqa: F401  (autouse)
