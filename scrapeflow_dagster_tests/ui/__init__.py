"""End-to-end tests of what the Dagster UI shows, driven in headless Debian Chromium through
Playwright against a real `dagster dev`; skipped without Chromium or Playwright, except in CI."""
