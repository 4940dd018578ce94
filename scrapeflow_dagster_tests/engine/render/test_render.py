"""Pages built by scripts, rendered through the gate: the bundled site's `/app/` through the
engine's chain (`scrape`, `render`, `pages`) with the real Chromium."""

from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest

from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.render import render
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.render.browser import RunBrowser
from scrapeflow_dagster.engine.render.devtools import BrowserError
from scrapeflow_dagster.engine.run.execute import execute_async
from scrapeflow_dagster.engine.settings import RenderSettings, ScrapeSettings
from scrapeflow_dagster.engine.state.files import load_status
from scrapeflow_dagster.site.content.scripted import SCRIPTED_ITEMS, item_name
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.support.netns import PublicHost, public_host  # noqa: F401

CHAIN = [scrape, render, pages]


async def _requests(site: LocalSite) -> dict[str, int]:
    async with aiohttp.ClientSession() as session:
        async with session.get(site.url("/control/requests")) as answer:
            paths: dict[str, int] = (await answer.json())["paths"]
    return paths


def _status(directory: Path, key: str) -> dict[str, Any]:
    status = load_status(directory, key)
    assert status is not None
    return status


async def test_a_script_built_page_is_rendered_and_its_links_are_the_scripts(
    site: LocalSite, tmp_path: Path
) -> None:
    tasks = {
        "shop": {"url": site.url("/app/"), "render": True},
        "item": {"url": site.url("/app/item/3"), "render": True},
        "plain": {"url": site.url("/app/item/4")},  # not marked: the shell as served
    }
    done = await execute_async(CHAIN, tmp_path, tasks, settings=ScrapeSettings())
    assert sorted(done) == ["item", "plain", "shop"]

    shop = _status(tmp_path, "shop")
    assert shop["render"]["rendered"] is True and shop["render"]["settled"] is True
    assert shop["pages"]["rendered"] is True
    assert shop["pages"]["links"] == [site.url(f"/app/item/{i}") for i in range(SCRIPTED_ITEMS)]
    # app.js and items.json through the gate; the logo refused unfetched (images blocked).
    assert shop["render"]["fetched"] == 2 and shop["render"]["blocked"] == 1
    assert shop["render"]["refused"] == 0

    item = _status(tmp_path, "item")
    assert item["pages"]["title"] == "Item 3"
    assert item_name(3) in item["pages"]["text_start"]
    assert item["pages"]["links"] == [site.url("/app/"), site.url("/app/item/4")]

    plain = _status(tmp_path, "plain")
    assert plain["render"] == {"rendered": False}
    assert plain["pages"]["links"] == [] and "rendered" not in plain["pages"]

    counts = await _requests(site)
    assert "/app/logo.png" not in counts  # never requested by anyone
    assert counts["/app/"] == 1 and counts["/app/item/3"] == 1  # the documents: scrape's only
    assert counts["/app/item.js"] == 1  # the gate fetched it once for item 3 (not for item 4)


async def test_a_page_that_never_settles_is_kept_as_it_is_then(
    site: LocalSite, tmp_path: Path
) -> None:
    settings = ScrapeSettings(render=RenderSettings(settle_seconds=1.0))
    tasks = {"ticker": {"url": site.url("/app/never-settles"), "render": True}}
    assert await execute_async(CHAIN, tmp_path, tasks, settings=settings) == ["ticker"]
    ticker = _status(tmp_path, "ticker")
    assert ticker["render"]["settled"] is False
    assert "Live ticker" in ticker["pages"]["text_start"]


async def test_a_slow_api_within_the_settle_time_is_waited_for(
    site: LocalSite, tmp_path: Path
) -> None:
    settings = ScrapeSettings(render=RenderSettings(settle_seconds=5.0))
    tasks = {"slow": {"url": site.url("/app/slow?seconds=1"), "render": True}}
    assert await execute_async(CHAIN, tmp_path, tasks, settings=settings) == ["slow"]
    slow = _status(tmp_path, "slow")
    assert slow["render"]["settled"] is True
    assert "Arrived late" in slow["pages"]["text_start"]


async def test_a_task_marked_render_without_a_render_step_fails_naming_it(
    site: LocalSite, tmp_path: Path
) -> None:
    tasks = {"shop": {"url": site.url("/app/"), "render": True}}
    assert await execute_async([scrape, pages], tmp_path, tasks) == []
    error = _status(tmp_path, "shop")["pages_status"]
    assert "render" in error and "SCRAPEFLOW_RENDER=1" in error


async def test_a_chromium_not_installed_fails_the_render_naming_it(
    site: LocalSite, tmp_path: Path
) -> None:
    settings = ScrapeSettings(render=RenderSettings(chromium_path="/nowhere/chromium"))
    tasks = {"shop": {"url": site.url("/app/"), "render": True}}
    assert await execute_async(CHAIN, tmp_path / "data", tasks, settings=settings) == []
    status = _status(tmp_path / "data", "shop")
    assert status["scrape_status"] == "SUCCESS"
    assert "/nowhere/chromium is not installed" in status["render_status"]
    assert "render_chromium_path" in status["render_status"]


async def test_a_public_pages_script_cannot_reach_an_internal_address(
    public_host: PublicHost,  # noqa: F811
    site: LocalSite,
    tmp_path: Path,
) -> None:
    """The bundled site on a public address (a network namespace), its `/app/internal` page's
    script asking for a page of this machine's loopback (the `site` fixture): the gate refuses
    it, the internal site never sees a request, and the page shows what the script got."""
    public = public_host.serve_site(tmp_path / "site.log")
    secret = site.url("/page/1")
    tasks = {"probe": {"url": f"{public}/app/internal?target={quote(secret)}", "render": True}}
    assert await execute_async(CHAIN, tmp_path / "data", tasks) == ["probe"]
    probe = _status(tmp_path / "data", "probe")
    assert probe["render"]["refused"] == 1
    [refusal] = probe["render"]["refusals"]
    assert refusal["url"] == secret and "loopback" in refusal["error"]
    assert probe["pages"]["text_start"] == "blocked"
    assert "/page/1" not in await _requests(site)


async def test_the_browser_reaches_nothing_by_itself(site: LocalSite) -> None:
    """A page of the run's browser with its interception turned off (nothing held for the
    gate): its navigation to the local site fails, by name and by address, and the site sees
    no request."""
    browser = RunBrowser(RenderSettings(), user_agent="test")
    try:
        for url in (site.url("/page/1"), site.url("/page/2").replace("127.0.0.1", "localhost")):
            async with browser.page() as page:
                await page.pipe.send("Fetch.disable", None, page.session_id)
                with pytest.raises(BrowserError, match="ERR_(PROXY|NAME)"):
                    await page.goto(url, timeout=10)
    finally:
        await browser.aclose()
    assert not {"/page/1", "/page/2"} & set(await _requests(site))


async def test_render_auto_renders_the_patterns_a_sample_shows_need_it(
    site: LocalSite, tmp_path: Path
) -> None:
    """Script-built items and plain pages, all `render: auto`, one at a time: the items'
    pattern needs a browser from its first sample on, so every item is rendered; the plain
    pages' pattern shows no difference over its three samples, so the pages after them are
    parsed from their bodies. Every page's links are what a browser finds."""
    items = {f"item{i}": {"url": site.url(f"/app/item/{i}"), "render": "auto"} for i in range(6)}
    plain = {f"page{n}": {"url": site.url(f"/page/{n}"), "render": "auto"} for n in range(6)}
    tasks = {**items, **plain}
    done = await execute_async(CHAIN, tmp_path, tasks, max_parallelism=1)
    assert sorted(done) == sorted(tasks)

    for i in range(6):
        status = _status(tmp_path, f"item{i}")
        assert status["render"]["rendered"] is True
        assert status["pages"]["title"] == f"Item {i}"
        assert site.url("/app/") in status["pages"]["links"]
    assert _status(tmp_path, "item0")["render"]["browser_needed"] is True
    assert "browser_needed" not in _status(tmp_path, "item1")["render"]  # judged: rendered

    rendered = [n for n in range(6) if _status(tmp_path, f"page{n}")["render"]["rendered"]]
    assert rendered == [0, 1, 2]
    for n in range(6):
        status = _status(tmp_path, f"page{n}")
        assert status["render"].get("browser_needed", False) is False
        assert status["pages"]["links"][0] == site.url(f"/page/{n + 1}")
        assert len(status["pages"]["links"]) == 10
    assert "static" in _status(tmp_path, "page3")["render"]["choice"]


async def test_a_failed_render_is_done_again_from_the_stored_body(
    site: LocalSite, tmp_path: Path
) -> None:
    """A run whose browser does not start fails the render naming the path, and keeps the
    fetched body; the next run renders from it without requesting the page again."""
    tasks = {"shop": {"url": site.url("/app/"), "render": True}}
    broken = ScrapeSettings(render=RenderSettings(chromium_path=str(tmp_path / "no-chromium")))
    assert await execute_async(CHAIN, tmp_path / "data", tasks, settings=broken) == []
    failed = _status(tmp_path / "data", "shop")
    assert failed["scrape_status"] == "SUCCESS"
    assert str(tmp_path / "no-chromium") in failed["render_status"]

    assert await execute_async(CHAIN, tmp_path / "data", ["shop"]) == ["shop"]
    shop = _status(tmp_path / "data", "shop")
    assert len(shop["pages"]["links"]) == SCRIPTED_ITEMS
    assert (await _requests(site))["/app/"] == 1  # the document: fetched once, by the first run


async def test_render_auto_pages_in_flight_wait_for_their_patterns_samples(
    site: LocalSite, tmp_path: Path
) -> None:
    """Twelve plain pages and six items at once (`render: auto`, all in flight together): the
    pages beyond each pattern's three samples wait for the judgement, so only the plain
    pattern's samples are rendered, and every item is."""
    plain = {f"page{n}": {"url": site.url(f"/page/{n}"), "render": "auto"} for n in range(12)}
    items = {f"item{i}": {"url": site.url(f"/app/item/{i}"), "render": "auto"} for i in range(6)}
    tasks = {**plain, **items}
    assert sorted(await execute_async(CHAIN, tmp_path, tasks)) == sorted(tasks)
    rendered = {key for key in tasks if _status(tmp_path, key)["render"]["rendered"]}
    assert set(items) <= rendered
    assert len(rendered - set(items)) == 3
    for i in range(6):
        assert _status(tmp_path, f"item{i}")["pages"]["title"] == f"Item {i}"


async def test_blocked_resource_types_are_a_setting(site: LocalSite, tmp_path: Path) -> None:
    """With no type blocked, the page's image is fetched too, through the gate."""
    settings = ScrapeSettings(render=RenderSettings(blocked_resources=()))
    tasks = {"item": {"url": site.url("/app/item/1"), "render": True}}
    assert await execute_async(CHAIN, tmp_path, tasks, settings=settings) == ["item"]
    item = _status(tmp_path, "item")
    assert item["render"]["blocked"] == 0 and item["render"]["fetched"] == 3
    assert (await _requests(site))["/app/logo.png"] == 1
