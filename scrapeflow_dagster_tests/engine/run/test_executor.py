"""The scrapeflow contract of `execute_async`: README examples and the status format.

Skips and forcing are in `test_executor_reruns.py`, failures in `test_executor_failures.py`.
Every test runs the real engine against the bundled local site and reads the real files.
"""

import asyncio
import hashlib
import random
from datetime import datetime
from pathlib import Path

from scrapeflow_dagster.engine.executor import Context, ExecutorOutput, execute_async, taskify
from scrapeflow_dagster.engine.scrape import scrape, scrape_with_validation
from scrapeflow_dagster.engine.status import StatusData
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.engine.run.helpers import read

LAST_RUN_FORMAT = "%Y-%m-%d %H:%M:%S.%f"


async def test_readme_basic_usage(site: LocalSite, tmp_path: Path) -> None:
    tasks = {
        "google": {"url": site.url("/page/1")},
        "bing": {"url": site.url("/page/2")},
    }
    directory = tmp_path / "test"

    done = await execute_async(executors=[scrape], directory=directory, tasks=tasks)

    assert sorted(done) == ["bing", "google"]
    for key, params in tasks.items():
        status = read(directory, key)
        body = (directory / f"{key}.scrape").read_bytes()
        assert status["name"] == key
        assert status["params"] == params
        assert status["scrape_status"] == "SUCCESS"
        datetime.strptime(status["scrape_last_run"], LAST_RUN_FORMAT)
        output = status["scrape"]
        assert output["size"] == len(body) > 0
        assert output["content"] == hashlib.md5(body).hexdigest()
        assert output["response_headers"]["Content-Type"].startswith("text/html")
        assert f"<title>Page {params['url'][-1]}</title>".encode() in body


async def test_status_file_is_indented_json_named_after_the_key(
    site: LocalSite, tmp_path: Path
) -> None:
    await execute_async([scrape], tmp_path, {"k": {"url": site.url("/page/1")}})

    text = (tmp_path / "k.status.json").read_text()
    assert text.startswith('{\n  "name": "k",\n  "params": {\n    "url": ')
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


async def test_readme_taskify_executor(site: LocalSite, tmp_path: Path) -> None:
    @taskify
    async def scraper(context: Context, key: str, status: StatusData) -> ExecutorOutput:
        response_status: ExecutorOutput = {}
        url = status["params"]["url"]
        assert context.session is not None
        async with context.session.get(url=url) as response:
            code = response.status
            headers = {k: response.headers.getone(k) for k in response.headers.keys()}
            if code != 200:
                raise RuntimeError(f"HTTP response {code}")
            resp = await response.read()
            response_status["size"] = len(resp)
            response_status["content"] = hashlib.md5(resp).hexdigest()
            response_status["response_headers"] = headers
            with open(context.dir / f"{key}.scraper", mode="wb") as f:
                f.write(resp)
        return response_status

    tasks = {"ok": {"url": site.url("/page/5")}, "bad": {"url": site.url("/status/500")}}
    done = await execute_async([scraper], tmp_path, tasks)

    assert done == ["ok"]
    ok = read(tmp_path, "ok")
    assert ok["scraper_status"] == "SUCCESS"
    assert ok["scraper"]["size"] == len((tmp_path / "ok.scraper").read_bytes())
    bad = read(tmp_path, "bad")
    assert bad["scraper_status"] == "ERROR RuntimeError::HTTP response 500"
    assert "scraper" not in bad
    datetime.strptime(bad["scraper_last_run"], LAST_RUN_FORMAT)


def readme_callback(content: bytes) -> None:
    if content.find(b"<title>Page") < 0 or content.find(b"</html>") < 0:
        raise RuntimeError("Scrape missing data.")


async def test_readme_scrape_with_validation_three_argument_form(
    site: LocalSite, tmp_path: Path
) -> None:
    async def scrape(context: Context, status: StatusData) -> ExecutorOutput:
        """The README's user executor, named `scrape` so its results are stored as `scrape`."""
        await asyncio.sleep(0.01 * random.random())
        return await scrape_with_validation(context, status, readme_callback)

    tasks = {"page": {"url": site.url("/page/7")}, "captcha": {"url": site.url("/captcha")}}
    done = await execute_async([scrape], tmp_path, tasks)

    assert done == ["page"]
    page = read(tmp_path, "page")
    assert page["scrape_status"] == "SUCCESS"
    body = (tmp_path / "page.scrape").read_bytes()
    assert page["scrape"]["content"] == hashlib.md5(body).hexdigest()
    captcha = read(tmp_path, "captcha")
    assert captcha["scrape_status"] == "ERROR BlockedError::Scrape missing data."
    assert not (tmp_path / "captcha.scrape").exists()


async def test_scrape_with_validation_four_argument_form(site: LocalSite, tmp_path: Path) -> None:
    @taskify
    async def checked(context: Context, key: str, status: StatusData) -> ExecutorOutput:
        return await scrape_with_validation(context, key, status, readme_callback)

    tasks = {"page": {"url": site.url("/page/8")}, "captcha": {"url": site.url("/captcha")}}
    done = await execute_async([checked], tmp_path, tasks)

    assert done == ["page"]
    assert read(tmp_path, "page")["checked_status"] == "SUCCESS"
    assert (tmp_path / "page.scrape").read_bytes().startswith(b"<!DOCTYPE html>")
    # scrapeflow's bug: it read a file literally named `{key}.scrape`.
    assert not (tmp_path / "{key}.scrape").exists()
    assert read(tmp_path, "captcha")["checked_status"].startswith("ERROR BlockedError::")
