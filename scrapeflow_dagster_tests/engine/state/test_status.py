"""Status files: scrapeflow's format (old files included), `read_status`, `status_summary`."""

import hashlib
import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from scrapeflow_dagster.engine.errors import StatusFileError
from scrapeflow_dagster.engine.executor import Context, ExecutorResponse, execute_async
from scrapeflow_dagster.engine.scrape import scrape
from scrapeflow_dagster.engine.status import (
    StatusData,
    load_status,
    read_status,
    status_summary,
    urls_to_tasks,
)
from scrapeflow_dagster.engine.tasks.keys import url_to_key
from scrapeflow_dagster.site.server import LocalSite

# A status file as scrapeflow wrote it (the README's example, comments removed).
ORIGINAL_STATUS = {
    "name": "9cbc5ee4b61e0acb335d56e96c6b2586",
    "params": {"url": "http://www.bing.com"},
    "scraper": {
        "size": 95534,
        "content": "b20a97b447f1b3c6573e20d57d7fe4b8",
        "response_headers": {
            "Cache-Control": "private",
            "Transfer-Encoding": "chunked",
            "Content-Type": "text/html; charset=utf-8",
            "Content-Encoding": "gzip",
        },
    },
    "scraper_status": "SUCCESS",
    "scraper_last_run": "2022-08-05 16:03:52.336815",
    "executor2": {},
    "executor2_status": "ERROR RunTimeError::could not compute something",
    "executor2_last_run": "2022-08-05 16:03:52.336815",
}


def test_url_to_key_is_the_md5_of_the_url() -> None:
    url = "http://www.bing.com"
    assert url_to_key(url) == hashlib.md5(url.encode()).hexdigest()
    assert url_to_key(url) != url_to_key(url + "/")


def test_urls_to_tasks() -> None:
    urls = ["http://www.google.com", "http://www.bing.com"]
    assert urls_to_tasks(urls) == {url_to_key(u): {"url": u} for u in urls}


async def run_three(site: LocalSite, directory: Path) -> None:
    async def check(context: Context, status: StatusData) -> ExecutorResponse:
        return {"ok": True}, True

    tasks = {
        "a": {"url": site.url("/page/1")},
        "b": {"url": site.url("/page/2")},
        "c": {"url": site.url("/status/404")},
    }
    await execute_async([scrape, check], directory, tasks)


async def test_read_status_is_indexed_by_key(site: LocalSite, tmp_path: Path) -> None:
    await run_three(site, tmp_path)

    frame = read_status(tmp_path)

    assert list(frame.index) == ["a", "b", "c"]
    assert frame.index.name == "key"
    assert frame.loc["a", "scrape_status"] == "SUCCESS"
    assert frame.loc["a", "params"] == {"url": site.url("/page/1")}
    assert frame.loc["c", "scrape_status"] == "ERROR HttpStatusError::HTTP response 404"
    assert frame.loc["a", "check"] == {"ok": True}
    assert frame.attrs["errors"] == []


async def test_status_summary_counts_statuses_per_executor(site: LocalSite, tmp_path: Path) -> None:
    await run_three(site, tmp_path)

    summary = status_summary(tmp_path)

    error = "ERROR HttpStatusError::HTTP response 404"
    assert list(summary.index) == ["SUCCESS", error]
    assert summary.index.name == "status"
    assert list(summary.columns) == ["scrape", "check"]
    assert (summary.dtypes == "int64").all()
    assert summary.loc["SUCCESS", "scrape"] == 2
    assert summary.loc[error, "scrape"] == 1  # failed executors have no output, still counted
    assert summary.loc["SUCCESS", "check"] == 2
    assert summary.loc[error, "check"] == 0


def test_read_status_and_summary_of_an_empty_folder(tmp_path: Path) -> None:
    frame = read_status(tmp_path)
    summary = status_summary(tmp_path)

    assert len(frame) == 0
    assert frame.attrs["errors"] == []
    assert summary.shape == (0, 0)


async def test_status_written_by_scrapeflow_loads_and_is_skipped(tmp_path: Path) -> None:
    key = ORIGINAL_STATUS["name"]
    assert isinstance(key, str)
    path = tmp_path / f"{key}.status.json"
    path.write_text(json.dumps(ORIGINAL_STATUS, indent=2))
    calls: Counter[str] = Counter()

    async def scraper(context: Context, status: StatusData) -> ExecutorResponse:
        calls["scraper"] += 1
        return {}, True

    async def executor2(context: Context, status: StatusData) -> ExecutorResponse:
        calls["executor2"] += 1
        return {"fixed": True}, True

    done = await execute_async([scraper, executor2], tmp_path, [key])

    assert done == [key]
    assert calls == {"executor2": 1}  # the scrape succeeded before and is skipped
    status = load_status(tmp_path, key)
    assert status is not None
    assert status["scraper"] == ORIGINAL_STATUS["scraper"]
    assert status["scraper_last_run"] == "2022-08-05 16:03:52.336815"
    assert status["executor2"] == {"fixed": True}
    assert status["executor2_status"] == "SUCCESS"
    assert status["params"] == ORIGINAL_STATUS["params"]


def test_status_written_by_scrapeflow_in_read_status_and_summary(tmp_path: Path) -> None:
    (tmp_path / "old.status.json").write_text(json.dumps(ORIGINAL_STATUS, indent=2))

    frame = read_status(tmp_path)
    summary = status_summary(tmp_path)

    assert frame.at["old", "scraper"] == ORIGINAL_STATUS["scraper"]
    expected = pd.DataFrame(
        {"scraper": [1, 0], "executor2": [0, 1]},
        index=pd.Index(
            ["SUCCESS", "ERROR RunTimeError::could not compute something"], name="status"
        ),
        dtype="int64",
    )
    pd.testing.assert_frame_equal(summary, expected)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (json.dumps(ORIGINAL_STATUS)[:120].encode(), "not valid JSON (truncated?)"),
        (b"", "not valid JSON"),
        (b"\x00\x01binary", "not valid JSON"),
        (b"[1, 2, 3]", "is not a scrapeflow status"),
        (b'{"hello": "world"}', "is not a scrapeflow status (params: Field required)"),
        (b'{"name": "k", "params": [1]}', "is not a scrapeflow status (params:"),
    ],
)
def test_bad_status_files_raise_an_error_naming_the_file(
    tmp_path: Path, content: bytes, expected: str
) -> None:
    path = tmp_path / "k.status.json"
    path.write_bytes(content)

    with pytest.raises(StatusFileError) as info:
        load_status(tmp_path, "k")

    assert str(path) in str(info.value)
    assert expected in str(info.value)
    assert isinstance(info.value, ValueError)


def test_missing_status_file_is_none(tmp_path: Path) -> None:
    assert load_status(tmp_path, "nothing") is None


def test_read_status_survives_bad_files(tmp_path: Path) -> None:
    (tmp_path / "good.status.json").write_text(json.dumps(ORIGINAL_STATUS))
    (tmp_path / "cut.status.json").write_text(json.dumps(ORIGINAL_STATUS)[:50])
    (tmp_path / "foreign.status.json").write_text('{"not": "ours"}')
    (tmp_path / ".good.status.json.x1y2.tmp").write_text("{")  # a write cut short by a crash

    frame = read_status(tmp_path)
    summary = status_summary(tmp_path)

    assert list(frame.index) == ["good"]
    named = sorted(Path(path).name for path, _ in frame.attrs["errors"])
    assert named == ["cut.status.json", "foreign.status.json"]
    assert all(path in message for path, message in frame.attrs["errors"])
    assert summary.loc["SUCCESS", "scraper"] == 1
