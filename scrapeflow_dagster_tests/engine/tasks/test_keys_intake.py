"""Task keys, URLs, dedup keys, task files (.txt, .csv, .jsonl) and adding tasks."""

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.errors import InvalidTaskError
from scrapeflow_dagster.engine.executor import execute_async
from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.scrape import scrape
from scrapeflow_dagster.engine.state.files import stored_keys
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.status import load_status, write_status
from scrapeflow_dagster.engine.tasks.adding import LIST_FOLDER_FROM, add_tasks
from scrapeflow_dagster.engine.tasks.intake import (
    MAX_LINE_BYTES,
    LineError,
    TaskSpec,
    read_task_file,
)
from scrapeflow_dagster.engine.tasks.keys import (
    canonical_url,
    request_key,
    validate_key,
    validate_url,
)

URL = "http://127.0.0.1:9/page/1"


def split(items: list[TaskSpec | LineError]) -> tuple[list[TaskSpec], list[LineError]]:
    tasks = [i for i in items if isinstance(i, TaskSpec)]
    errors = [i for i in items if isinstance(i, LineError)]
    return tasks, errors


def errors_by_line(errors: list[LineError]) -> dict[int, str]:
    return {e.line: e.message for e in errors}


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


# Task files.


def test_txt_file(tmp_path: Path) -> None:
    path = tmp_path / "tasks.txt"
    path.write_text(
        "# a comment\n"
        "\n"
        "http://example.com/1\n"
        "ftp://example.com/2\n"
        "/relative\n"
        "javascript:alert(1)\n"
        "file:///etc/passwd\n"
        "  http://example.com/3  \r\n"
    )

    tasks, errors = split(list(read_task_file(path)))

    assert [(t.line, t.params) for t in tasks] == [
        (3, {"url": "http://example.com/1"}),
        (8, {"url": "http://example.com/3"}),
    ]
    assert [t.key for t in tasks] == [
        request_key("http://example.com/1"),
        request_key("http://example.com/3"),
    ]
    assert sorted(errors_by_line(errors)) == [4, 5, 6, 7]
    for error in errors:
        assert str(error).startswith(f"{path}:{error.line}: ")


def test_csv_file_with_bad_rows(tmp_path: Path) -> None:
    path = tmp_path / "tasks.csv"
    lines = [
        "url,key,post_payload,cookies,country",  # 1
        "http://example.com/1,one,,,US",  # 2
        '"http://example.com/2,two,,,',  # 3 unclosed quote
        'http://example.com/3,"th"ree,,,',  # 4 text after a closing quote
        "http://example.com/4,four",  # 5 too few fields
        "http://example.com/5,five,{not json,,",  # 6 bad JSON payload
        "http://example.com/6,../etc,,,",  # 7 traversal
        "http://example.com/7,a...b,,,",  # 8 dots
        'http://example.com/8,"a,b",,,',  # 9 comma in key
        "http://example.com/9,nine,,[1],",  # 10 cookies not an object
        "notaurl,ten,,,",  # 11
        'http://example.com/11,eleven,"{""q"": 1}","{""c"": ""v""}",',  # 12
    ]
    path.write_text("\n".join(lines) + "\n")

    tasks, errors = split(list(read_task_file(path)))

    assert [(t.key, t.line) for t in tasks] == [("one", 2), ("eleven", 12)]
    assert tasks[0].params == {"url": "http://example.com/1", "country": "US"}
    assert tasks[1].params == {
        "url": "http://example.com/11",
        "post_payload": {"q": 1},
        "cookies": {"c": "v"},
    }
    by_line = errors_by_line(errors)
    assert sorted(by_line) == [3, 4, 5, 6, 7, 8, 9, 10, 11]
    assert by_line[3].startswith("malformed CSV")
    assert by_line[4].startswith("malformed CSV")
    assert "fields where the header has" in by_line[5]
    assert by_line[6].startswith("post_payload is not valid JSON")
    assert "'../etc'" in by_line[7]
    assert "'..'" in by_line[8]
    assert "','" in by_line[9]
    assert "cookies must be an object" in by_line[10]
    assert all(str(e).startswith(f"{path}:{e.line}: ") for e in errors)


def test_csv_without_url_column_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tasks.csv"
    path.write_text("link,key\nhttp://example.com/1,one\n")

    assert [str(i) for i in read_task_file(path)] == [f"{path}:1: CSV header needs a 'url' column"]


def test_jsonl_file_with_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    records = [
        json.dumps({"url": "http://example.com/1", "key": "one"}),  # 1
        '{"url": "http://example.com/2", ',  # 2 bad JSON
        json.dumps(["http://example.com/3"]),  # 3 not an object
        json.dumps({"url": "ftp://example.com/4"}),  # 4
        json.dumps({"url": "http://example.com/5", "key": "a\nb"}),  # 5 newline in key
        json.dumps({"url": "http://example.com/6", "key": ".."}),  # 6
        json.dumps({"url": "http://example.com/7", "key": "a/b"}),  # 7
        json.dumps({"url": "http://example.com/8", "headers": ["x"]}),  # 8
        json.dumps({"url": "http://example.com/9", "key": "x" * MAX_LINE_BYTES}),  # 9 too long
        "",  # 10 blank
        json.dumps({"url": "http://example.com/11", "post_payload": {"q": 1}}),  # 11
        json.dumps({"url": "http://example.com/12", "headers": {"X-Page": 1}}),  # 12
        json.dumps({"url": "http://example.com/13", "cookies": {"sid": None}}),  # 13
    ]
    path.write_text("\n".join(records) + "\n")

    tasks, errors = split(list(read_task_file(path)))

    assert [t.line for t in tasks] == [1, 11]
    assert tasks[1].key == request_key("http://example.com/11", method="POST", body={"q": 1})
    by_line = errors_by_line(errors)
    assert sorted(by_line) == [2, 3, 4, 5, 6, 7, 8, 9, 12, 13]
    assert by_line[2].startswith("not valid JSON")
    assert "control character" in by_line[5]
    assert "headers must be an object" in by_line[8]
    assert by_line[9] == f"line is longer than {MAX_LINE_BYTES} bytes"
    assert by_line[12] == "headers must map names to strings: 'X-Page' is int"
    assert by_line[13] == "cookies must map names to strings: 'sid' is NoneType"
    assert all(str(e).startswith(f"{path}:{e.line}: ") for e in errors)


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("tasks.txt", "http://example.com/1\n"),
        ("tasks.csv", "url,key\nhttp://example.com/1,one\n"),
        ("tasks.jsonl", '{"url": "http://example.com/1"}\n'),
    ],
)
def test_utf8_bom_is_ignored(tmp_path: Path, name: str, content: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"\xef\xbb\xbf" + content.encode())

    tasks, errors = split(list(read_task_file(path)))

    assert errors == []
    assert [t.params["url"] for t in tasks] == ["http://example.com/1"]


def test_unknown_or_missing_file(tmp_path: Path) -> None:
    odd = tmp_path / "tasks.xml"
    odd.write_text("<tasks/>")
    missing = tmp_path / "missing.txt"

    assert [(e.line, "unknown task file type" in str(e)) for e in read_task_file(odd)] == [
        (0, True)
    ]
    (error,) = read_task_file(missing)
    assert isinstance(error, LineError)
    assert str(error).startswith(f"{missing}:0: cannot read")


# Adding tasks.


def write_jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def fillers(count: int) -> list[dict[str, object]]:
    """New tasks that make a file big enough for the folder to be listed and the status files
    created in one pass (`LIST_FOLDER_FROM`), as for a big task file."""
    return [{"url": f"http://example.com/filler/{n}", "key": f"filler-{n}"} for n in range(count)]


# Both ways `add_tasks` stores: a lookup per task, and one listing plus one creating pass.
BOTH_WAYS = pytest.mark.parametrize("filler", [0, LIST_FOLDER_FROM], ids=["lookups", "listing"])


@BOTH_WAYS
def test_add_tasks_keeps_the_first_of_conflicting_duplicates(tmp_path: Path, filler: int) -> None:
    layout = DataLayout(tmp_path / "data")
    path = write_jsonl(
        tmp_path / "tasks.jsonl",
        [
            {"url": "http://example.com/1", "key": "k"},
            {"url": "http://example.com/2", "key": "k"},
            {"url": "http://example.com/1", "key": "k"},  # the same task again: not an error
            {"url": "http://example.com/3", "key": "other"},
            {"url": "nope", "key": "bad"},
            *fillers(filler),
        ],
    )

    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        report = add_tasks(layout, read_task_file(path), ledger=ledger)

    assert report.keys == ["k", "other", *(f"filler-{n}" for n in range(filler))]
    assert report.new == 2 + filler
    assert [(e.line, e.path) for e in report.errors] == [(2, path), (5, path)]
    assert "already has different params" in report.errors[0].message
    assert f"{path}:1" in report.errors[0].message
    status = load_status(layout.status_dir, "k")
    assert status is not None
    assert status["params"] == {"url": "http://example.com/1"}
    assert not (layout.status_dir / "bad.status.json").exists()


@BOTH_WAYS
def test_add_tasks_leaves_existing_status_files_untouched(tmp_path: Path, filler: int) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    done = {
        "name": "same",
        "params": {"url": "http://example.com/same"},
        "scrape": {"size": 1},
        "scrape_status": "SUCCESS",
        "scrape_last_run": "2024-01-01 00:00:00.000001",
    }
    write_status(layout.status_dir, "same", done)
    write_status(layout.status_dir, "changed", {**done, "name": "changed"})
    (layout.status_dir / "broken.status.json").write_text('{"params": ')
    before = {p.name: p.read_bytes() for p in layout.status_dir.iterdir()}
    path = write_jsonl(
        tmp_path / "tasks.jsonl",
        [
            {"url": "http://example.com/same", "key": "same"},
            {"url": "http://example.com/new-url", "key": "changed"},
            {"url": "http://example.com/b", "key": "broken"},
            *fillers(filler),
        ],
    )

    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        report = add_tasks(layout, read_task_file(path), ledger=ledger)

    assert report.keys == ["same", *(f"filler-{n}" for n in range(filler))]
    assert (report.new, report.unchanged) == (filler, 1)
    by_line = errors_by_line(report.errors)
    assert "from its status file" in by_line[2]
    assert "broken.status.json" in by_line[3]
    after = {p.name: p.read_bytes() for p in layout.status_dir.iterdir()}
    assert {name: after[name] for name in before} == before
    assert len(after) == len(before) + filler


def test_a_key_stored_by_another_process_after_the_listing_is_not_overwritten(
    tmp_path: Path,
) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    listed = stored_keys(layout.status_dir)  # what discovery lists before it adds
    # Meanwhile another adder (the inbox sensor, `scrapeflow crawl`) stores two of the keys.
    theirs = {"name": "k", "params": {"url": "http://example.com/theirs"}}
    write_status(layout.status_dir, "k", theirs)
    write_status(layout.status_dir, "same", {"name": "same", "params": {"url": "http://e.com/s"}})
    path = write_jsonl(
        tmp_path / "tasks.jsonl",
        [
            {"url": "http://example.com/ours", "key": "k"},
            {"url": "http://e.com/s", "key": "same"},
            {"url": "http://example.com/new", "key": "new"},
        ],
    )

    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        report = add_tasks(layout, read_task_file(path), ledger=ledger, stored_keys=listed)

    assert report.keys == ["same", "new"]
    assert (report.new, report.unchanged) == (1, 1)
    assert "already has different params" in errors_by_line(report.errors)[1]
    assert load_status(layout.status_dir, "k") == theirs
    assert sorted(p.name for p in layout.status_dir.iterdir()) == [
        "k.status.json",
        "new.status.json",
        "same.status.json",
    ]
