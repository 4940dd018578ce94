"""Conditional refresh: a re-fetch sends the stored ETag / Last-Modified, a 304 is a success
that keeps the stored body and md5, and a forced re-fetch stays unconditional."""

from pathlib import Path

import aiohttp

from scrapeflow_dagster.engine.executor import execute_async
from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.state.files import load_status
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.conftest import fast_settings


async def answers(site: LocalSite) -> dict[str, int]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(site.url("/control/cached")) as response,
    ):
        return dict(await response.json())


async def run(directory: Path, tasks: dict, **options: object) -> None:
    await execute_async([scrape], directory, tasks, settings=fast_settings(), **options)  # type: ignore[arg-type]


async def test_a_refresh_gets_304s_and_keeps_every_body(site: LocalSite, tmp_path: Path) -> None:
    tasks = {f"c{n}": {"url": site.url(f"/cached/{n}")} for n in range(5)}
    await run(tmp_path, tasks)
    first = {key: load_status(tmp_path, key) for key in tasks}
    bodies = {key: (tmp_path / f"{key}.scrape").read_bytes() for key in tasks}
    assert await answers(site) == {"200": 5}

    await run(tmp_path, list(tasks), max_age_seconds=0)  # everything is stale: refresh

    assert await answers(site) == {"200": 5, "304": 5}
    for key in tasks:
        status = load_status(tmp_path, key)
        assert status is not None and status["scrape_status"] == "SUCCESS"
        output, before = status["scrape"], first[key]["scrape"]  # type: ignore[index]
        assert output["not_modified"] is True and output["http_status"] == 304
        assert (output["content"], output["size"]) == (before["content"], before["size"])
        assert status["scrape_last_run"] > first[key]["scrape_last_run"]  # type: ignore[index]
        assert (tmp_path / f"{key}.scrape").read_bytes() == bodies[key]
    # The page parsed from the kept body still reports the status it was served with.
    await execute_async([pages], tmp_path, list(tasks), settings=fast_settings())
    parsed = load_status(tmp_path, "c1")
    assert parsed is not None and parsed["pages"]["http_status"] == 200
    assert parsed["pages"]["title"] == "Page 1"


async def test_a_forced_refetch_is_unconditional(site: LocalSite, tmp_path: Path) -> None:
    tasks = {"c0": {"url": site.url("/cached/0")}}
    await run(tmp_path, tasks)

    await run(tmp_path, list(tasks), force_executors=["scrape"])

    assert await answers(site) == {"200": 2}
    status = load_status(tmp_path, "c0")
    assert status is not None and "not_modified" not in status["scrape"]


async def test_no_conditional_request_without_a_stored_body(
    site: LocalSite, tmp_path: Path
) -> None:
    tasks = {"c0": {"url": site.url("/cached/0")}}
    await run(tmp_path, tasks)
    (tmp_path / "c0.scrape").unlink()  # a 304 would leave the task without a page

    await run(tmp_path, list(tasks), max_age_seconds=0)

    assert await answers(site) == {"200": 2}
    assert (tmp_path / "c0.scrape").exists()
