"""Shared fixtures: the bundled local site, started for real on a free 127.0.0.1 port."""

import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import pytest

from scrapeflow_dagster.engine.settings import RetryPolicy, ScrapeSettings
from scrapeflow_dagster.site.server import LocalSite

SITE_PAGES = 1000
SITE_PAGE_BYTES = 2000


@pytest.fixture
async def site() -> AsyncIterator[LocalSite]:
    """The bundled test site (fresh flaky counters for every test)."""
    async with LocalSite(pages=SITE_PAGES, page_bytes=SITE_PAGE_BYTES) as running:
        yield running


def fast_settings(**policy: Any) -> ScrapeSettings:
    """Settings with millisecond backoff for fast retry tests; `policy` overrides RetryPolicy."""
    fast = RetryPolicy(
        backoff_base_seconds=0.01, backoff_max_seconds=0.05, retry_after_max_seconds=5.0
    )
    return ScrapeSettings(request_timeout_seconds=5.0, retry=dataclasses.replace(fast, **policy))


@pytest.fixture
def settings() -> ScrapeSettings:
    """Default limits with a fast retry policy."""
    return fast_settings()
