"""A rendered page's requests by other methods than GET and HEAD: the bundled site's `/graphql/`
page, whose script loads its content by a JSON POST, rendered with the real Chromium through
the engine's chain. To its own origin the POST goes through the gate (its body and Content-Type
forwarded, sent once); to another origin it is refused unless the settings list the method;
from a public page to an internal address it is refused by the address guard. A refusal names
the URL, the method and the reason."""

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest

from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.render import render
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.run.execute import execute_async
from scrapeflow_dagster.engine.settings import RenderSettings, ScrapeSettings
from scrapeflow_dagster.engine.state.files import load_status
from scrapeflow_dagster.lib.scrape_settings import ScrapeSettingsResource
from scrapeflow_dagster.site.content.graphql import GRAPHQL_ARTICLES, GRAPHQL_QUERY, article_title
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.support.netns import PublicHost, public_host  # noqa: F401

CHAIN = [scrape, render, pages]
TITLES = [article_title(i) for i in range(GRAPHQL_ARTICLES)]


async def _api_requests(site: LocalSite) -> list[dict[str, str]]:
    async with aiohttp.ClientSession() as session:
        async with session.get(site.url("/control/graphql")) as answer:
            seen: list[dict[str, str]] = (await answer.json())["requests"]
    return seen


def _status(directory: Path, key: str) -> dict[str, Any]:
    status = load_status(directory, key)
    assert status is not None
    return status


def _other_origin(site: LocalSite, path: str) -> str:
    """`path` on the same server under another name: another origin to the browser."""
    return site.url(path).replace("127.0.0.1", "localhost")


async def test_a_pages_post_to_its_own_origin_goes_through_the_gate(
    site: LocalSite, tmp_path: Path
) -> None:
    tasks = {"articles": {"url": site.url("/graphql/?tag=own"), "render": True}}
    assert await execute_async(CHAIN, tmp_path, tasks, settings=ScrapeSettings()) == ["articles"]
    status = _status(tmp_path, "articles")
    assert status["render"]["refused"] == 0 and status["render"]["fetched"] == 2  # script, POST
    assert all(title in status["pages"]["text_start"] for title in TITLES)
    [seen] = await _api_requests(site)
    assert seen["method"] == "POST" and seen["content_type"] == "application/json"
    assert json.loads(seen["body"]) == {"query": GRAPHQL_QUERY, "variables": {"tag": "own"}}


async def test_a_post_that_fails_is_sent_once(site: LocalSite, tmp_path: Path) -> None:
    """A 503 would be tried again for a GET; a POST is not (a second try may be a second
    write), as browsers do."""
    url = site.url(f"/graphql/?endpoint={quote('/graphql/api?status=503')}")
    tasks = {"articles": {"url": url, "render": True}}
    assert await execute_async(CHAIN, tmp_path, tasks, settings=ScrapeSettings()) == ["articles"]
    status = _status(tmp_path, "articles")
    assert status["render"]["refused"] == 0 and status["pages"]["text_start"] == "failed"
    assert [seen["method"] for seen in await _api_requests(site)] == ["POST"]


async def test_a_method_not_listed_for_the_pages_own_origin_is_refused(
    site: LocalSite, tmp_path: Path
) -> None:
    settings = ScrapeSettings(render=RenderSettings(script_methods=("PUT",)))
    url = site.url("/graphql/")
    tasks = {"articles": {"url": url, "render": True}}
    assert await execute_async(CHAIN, tmp_path, tasks, settings=settings) == ["articles"]
    status = _status(tmp_path, "articles")
    [refusal] = status["render"]["refusals"]
    assert refusal["url"] == site.url("/graphql/api") and refusal["method"] == "POST"
    assert refusal["error"].endswith("(render_script_methods)")
    assert status["pages"]["text_start"] == "failed"
    assert await _api_requests(site) == []


async def test_a_post_to_another_origin_is_refused_unless_listed(
    site: LocalSite, tmp_path: Path
) -> None:
    endpoint = _other_origin(site, "/graphql/api")
    url = site.url(f"/graphql/?endpoint={quote(endpoint)}")
    tasks = {"articles": {"url": url, "render": True}}

    assert await execute_async(CHAIN, tmp_path / "off", tasks, settings=ScrapeSettings()) == [
        "articles"
    ]
    status = _status(tmp_path / "off", "articles")
    assert status["render"]["refused"] == 1
    [refusal] = status["render"]["refusals"]
    assert refusal["url"] == endpoint and refusal["method"] == "POST"
    assert "render_script_methods_other_origins" in refusal["error"]
    assert status["pages"]["text_start"] == "failed"
    assert await _api_requests(site) == []

    allowed = ScrapeSettings(render=RenderSettings(script_methods_other_origins=("POST",)))
    assert await execute_async(CHAIN, tmp_path / "on", tasks, settings=allowed) == ["articles"]
    status = _status(tmp_path / "on", "articles")
    assert status["render"]["refused"] == 0
    assert all(title in status["pages"]["text_start"] for title in TITLES)
    assert [seen["method"] for seen in await _api_requests(site)] == ["POST"]


async def test_a_public_pages_post_to_an_internal_address_is_refused(
    public_host: PublicHost,  # noqa: F811
    site: LocalSite,
    tmp_path: Path,
) -> None:
    """The bundled site on a public address (a network namespace), its `/graphql/` page's
    script POSTing to the API of this machine's loopback (the `site` fixture), with every
    method allowed to other origins: the address guard refuses it all the same."""
    public = public_host.serve_site(tmp_path / "site.log")
    internal = site.url("/graphql/api")
    settings = ScrapeSettings(render=RenderSettings(script_methods_other_origins=("POST",)))
    tasks = {"probe": {"url": f"{public}/graphql/?endpoint={quote(internal)}", "render": True}}
    assert await execute_async(CHAIN, tmp_path / "data", tasks, settings=settings) == ["probe"]
    probe = _status(tmp_path / "data", "probe")
    assert probe["render"]["refused"] == 1
    [refusal] = probe["render"]["refusals"]
    assert refusal["url"] == internal and refusal["method"] == "POST"
    assert "loopback" in refusal["error"]
    assert probe["pages"]["text_start"] == "failed"
    assert await _api_requests(site) == []


@pytest.mark.parametrize("field", ["render_script_methods", "render_script_methods_other_origins"])
def test_an_unknown_method_is_refused_naming_the_field(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        ScrapeSettingsResource(**{field: ["POST", "FETCH"]}).build()  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=field):
        RenderSettings(**{field.removeprefix("render_"): ("post",)})  # type: ignore[arg-type]
