"""The executors after `scrape` (`validation`, `pages`) in one chain, and `check_page`."""

from pathlib import Path

import pytest

from scrapeflow_dagster.engine.errors import BlockedError
from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.validation import check_page, validation
from scrapeflow_dagster.engine.scrape import scrape
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.engine.executors.helpers import scrape_one


async def test_captcha_page_fails_validation_and_stops_the_chain(
    site: LocalSite, tmp_path: Path, settings: ScrapeSettings
) -> None:
    status = await scrape_one(
        tmp_path, site.url("/captcha"), settings=settings, executors=[scrape, validation, pages]
    )

    assert status["scrape_status"] == "SUCCESS"
    assert status["validation_status"].startswith("ERROR BlockedError::block page: found")
    assert status["validation_error_kind"] == "blocked"
    assert "pages_status" not in status


async def test_normal_page_is_validated_and_parsed(
    site: LocalSite, tmp_path: Path, settings: ScrapeSettings
) -> None:
    status = await scrape_one(
        tmp_path, site.url("/redirect/3"), settings=settings, executors=[scrape, validation, pages]
    )

    assert status["validation_status"] == "SUCCESS"
    assert status["validation"]["verdict"] == "ok"
    parsed = status["pages"]
    assert parsed["title"] == "Page 3"
    assert parsed["link_count"] == 10
    assert parsed["links"][0] == site.url("/page/4")  # absolute, against the final URL
    assert all(link.startswith(site.url("/page/")) for link in parsed["links"])
    assert parsed["text_bytes"] > 0


async def test_validation_without_a_stored_body_is_a_recorded_error(
    tmp_path: Path, settings: ScrapeSettings
) -> None:
    status = await scrape_one(
        tmp_path, "http://127.0.0.1/", settings=settings, executors=[validation]
    )

    assert status["validation_status"] == (
        "ERROR ScrapeError::no stored body for task 't': run scrape first"
    )


@pytest.mark.parametrize(
    "body", [b"", b"<html>tiny</html>", b"<html>" + b"x" * 100 + b" unusual traffic</html>"]
)
def test_check_page_rejects_tiny_and_block_pages(body: bytes) -> None:
    with pytest.raises(BlockedError):
        check_page(body)
