"""Task keys, URLs and dedup keys: what is refused, and when two requests are the same."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.errors import InvalidTaskError
from scrapeflow_dagster.engine.executor import execute_async
from scrapeflow_dagster.engine.scrape import scrape
from scrapeflow_dagster.engine.tasks.keys import (
    canonical_url,
    request_key,
    validate_key,
    validate_url,
)

URL = "http://127.0.0.1:9/page/1"


# Keys.


@pytest.mark.parametrize(
    "key", ["abc", "a.b", "9cbc5ee4b61e0acb335d56e96c6b2586", "page-1_x", "k" * 200, "é"]
)
def test_valid_keys(key: str) -> None:
    assert validate_key(key) == key


@pytest.mark.parametrize(
    "key",
    [
        "",
        " ",
        " a",
        "a/b",
        "/abs",
        "a\\b",
        ".",
        "..",
        "...",
        "a..b",
        "a...b",
        ".hidden",
        "a,b",
        "a\nb",
        "a\tb",
        "a\x00b",
        "k" * 201,
        None,
        5,
    ],
)
def test_unsafe_keys_are_refused(key: object) -> None:
    with pytest.raises(ValueError):
        validate_key(key)


@pytest.mark.parametrize(
    "tasks",
    [
        {"a/b": {"url": URL}},
        {"..": {"url": URL}},
        {".": {"url": URL}},
        {"ok": {"url": URL}, "x/../y": {"url": URL}},
        ["a", "b", "a"],
        [("a", {"url": URL}), ("a", {"url": URL + "2"})],
    ],
)
async def test_execute_async_refuses_bad_or_duplicate_keys_before_any_work(
    tmp_path: Path, tasks: object
) -> None:
    with pytest.raises(ValueError):
        await execute_async([scrape], tmp_path, tasks)  # type: ignore[arg-type]
    assert list(tmp_path.glob("*.status.json")) == []


async def test_duplicate_key_in_a_stream_is_refused(tmp_path: Path) -> None:
    def stream() -> Iterator[tuple[str, dict[str, str]]]:
        yield "a", {"url": URL}
        yield "a", {"url": URL}

    with pytest.raises(ValueError, match="given twice"):
        await execute_async([scrape], tmp_path, stream())


async def test_a_plain_string_of_tasks_is_refused_not_run_per_character(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not the string 'abc'"):
        await execute_async([scrape], tmp_path, "abc")
    assert list(tmp_path.glob("*.status.json")) == []


# URLs and dedup keys.


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.com/x",
        "javascript:alert(1)",
        "/page/1",
        "page/1",
        "example.com/page",
        "http://",
        "mailto:a@b.c",
        "",
        None,
        42,
    ],
)
def test_unfetchable_urls_are_refused(url: object) -> None:
    with pytest.raises(InvalidTaskError) as info:
        validate_url(url)
    assert repr(url) in str(info.value)


@pytest.mark.parametrize("url", ["http://example.com", "https://a.b/c?d=1#e", "HTTP://X.COM/"])
def test_http_urls_are_accepted(url: str) -> None:
    assert validate_url(url).scheme in ("http", "https")


@pytest.mark.parametrize(
    "variant",
    [
        "http://example.com/a?b=2&a=1",  # query order
        "http://example.com/a?a=1&b=2#section",  # fragment
        "http://EXAMPLE.com/a?a=1&b=2",  # host case
        "HTTP://example.com/a?a=1&b=2",  # scheme case
        "http://example.com:80/a?a=1&b=2",  # default port
    ],
)
def test_request_key_is_the_same_for_the_same_request(variant: str) -> None:
    assert request_key(variant) == request_key("http://example.com/a?a=1&b=2")
    assert canonical_url(variant) == "http://example.com/a?a=1&b=2"


def test_request_key_tells_different_requests_apart() -> None:
    base = request_key("http://example.com/a")
    assert request_key("http://example.com/b") != base
    assert request_key("http://example.com/a?x=1") != base
    assert request_key("http://example.com/a", method="POST") != base
    body = request_key("http://example.com/a", method="POST", body={"q": 1, "p": 2})
    assert body != request_key("http://example.com/a", method="POST")
    assert body == request_key("http://example.com/a", method="post", body={"p": 2, "q": 1})
    assert validate_key(base) == base
