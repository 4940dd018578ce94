"""The `scrape` executor's request: URLs it refuses, params, payload, cookies and user agent."""

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from scrapeflow_dagster.engine.executor import execute_async
from scrapeflow_dagster.engine.scrape import scrape
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.status import load_status
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.conftest import fast_settings
from scrapeflow_dagster_tests.engine.executors.helpers import scrape_one

BAD_HEADERS = "params['headers'] must be an object mapping names to strings"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://127.0.0.1/x", "only http and https"),
        ("/page/1", "only http and https"),
        ("file:///etc/passwd", "only http and https"),
    ],
)
async def test_unfetchable_url_is_a_recorded_error(
    tmp_path: Path, settings: ScrapeSettings, url: str, message: str
) -> None:
    status = await scrape_one(tmp_path, url, settings=settings)

    assert status["scrape_status"].startswith("ERROR ScrapeError::")
    assert message in status["scrape_status"]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"headers": 5}, BAD_HEADERS),
        ({"headers": ["Referer"]}, BAD_HEADERS),
        ({"headers": {"Authorization": 5}}, BAD_HEADERS),
        ({"cookies": "a=b"}, "params['cookies'] must be an object"),
    ],
)
async def test_malformed_params_fail_their_task_not_the_run(
    site: LocalSite, tmp_path: Path, settings: ScrapeSettings, params: dict[str, Any], message: str
) -> None:
    tasks = {"bad": {"url": site.url("/echo"), **params}, "good": {"url": site.url("/page/1")}}

    done = await execute_async([scrape], tmp_path, tasks, settings=settings)

    assert done == ["good"]
    bad = load_status(tmp_path, "bad")
    assert bad is not None
    assert bad["scrape_status"] == f"ERROR ScrapeError::{message}"


async def test_post_payload_cookies_and_headers_are_sent(
    site: LocalSite, tmp_path: Path, settings: ScrapeSettings
) -> None:
    payload = {"query": "shoes", "page": 2}

    await scrape_one(
        tmp_path,
        site.url("/echo?x=1"),
        settings=settings,
        post_payload=payload,
        cookies={"session": "abc"},
        headers={"Referer": "http://ref.test/"},
    )

    echo = json.loads((tmp_path / "t.scrape").read_bytes())
    assert echo["method"] == "POST"
    assert echo["json"] == payload
    assert echo["query"] == {"x": "1"}
    assert echo["cookies"] == {"session": "abc"}
    assert echo["headers"]["Referer"] == "http://ref.test/"
    assert echo["headers"]["Content-Type"] == "application/json"
    assert echo["headers"]["User-Agent"] == settings.user_agent


async def test_the_user_agent_names_this_project_and_is_a_setting(
    site: LocalSite, tmp_path: Path
) -> None:
    default = ScrapeSettings().user_agent
    assert (
        default.startswith("scrapeflow-dagster/")
        and "pypi.org/project/scrapeflow-dagster" in default
    )
    own = dataclasses.replace(fast_settings(), user_agent="acme-crawler/2 (+https://acme.test/bot)")

    await scrape_one(tmp_path, site.url("/echo"), settings=own)

    echo = json.loads((tmp_path / "t.scrape").read_bytes())
    assert echo["headers"]["User-Agent"] == "acme-crawler/2 (+https://acme.test/bot)"


async def test_get_without_payload(
    site: LocalSite, tmp_path: Path, settings: ScrapeSettings
) -> None:
    await scrape_one(tmp_path, site.url("/echo"), settings=settings)

    echo = json.loads((tmp_path / "t.scrape").read_bytes())
    assert echo["method"] == "GET"
    assert echo["json"] is None
    assert echo["cookies"] == {}


async def test_cookies_do_not_leak_between_tasks(
    site: LocalSite, tmp_path: Path, settings: ScrapeSettings
) -> None:
    tasks = {"first": {"url": site.url("/set-cookie?sid=1")}, "second": {"url": site.url("/echo")}}

    await execute_async([scrape], tmp_path, tasks, settings=settings, max_parallelism=1)

    assert json.loads((tmp_path / "second.scrape").read_bytes())["cookies"] == {}
