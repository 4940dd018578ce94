"""`cached_rules`: the robots.txt a real run cached, read without any request (what discovery
uses); absent, stale or unreadable copies are None."""

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.executor import execute_async
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.polite.robots import cached_rules, robots_cache_dir
from scrapeflow_dagster.engine.settings import DEFAULT_USER_AGENT
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.conftest import fast_settings
from scrapeflow_dagster_tests.engine.polite.test_robots import requests_seen

DAY_SECONDS = 24 * 3600.0


@pytest.fixture
async def site() -> AsyncIterator[LocalSite]:
    async with LocalSite(pages=20, page_bytes=500) as running:
        yield running


async def test_the_rules_a_run_cached_are_read_without_a_request(
    site: LocalSite, tmp_path: Path
) -> None:
    origin = f"http://127.0.0.1:{site.port}"
    assert cached_rules(tmp_path, origin, max_age_seconds=DAY_SECONDS) is None  # none yet
    tasks = {"g": {"url": site.url("/graph/3")}}
    assert await execute_async([scrape], tmp_path, tasks, settings=fast_settings()) == ["g"]

    rules = cached_rules(tmp_path, origin, max_age_seconds=DAY_SECONDS)
    assert rules is not None
    assert rules.allows(site.url("/graph/3"), DEFAULT_USER_AGENT)
    assert not rules.allows(site.url("/graph/private/3"), DEFAULT_USER_AGENT)
    assert (await requests_seen(site))["paths"]["/robots.txt"] == 1  # the run's fetch only
    # Another origin (other Host) was never cached; a copy older than the max age is stale.
    assert cached_rules(tmp_path, f"http://localhost:{site.port}", max_age_seconds=60) is None
    assert cached_rules(tmp_path, origin, max_age_seconds=0) is None


def test_an_unreadable_copy_is_none(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = robots_cache_dir(tmp_path)
    folder.mkdir(parents=True)
    (folder / "http-127.0.0.1_9.json").write_text('{"origin": "http://127.0.0.1:9", "body"')
    assert cached_rules(tmp_path, "http://127.0.0.1:9", max_age_seconds=DAY_SECONDS) is None
    assert "http-127.0.0.1_9.json" in caplog.text
