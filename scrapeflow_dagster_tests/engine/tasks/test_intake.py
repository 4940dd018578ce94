"""Task files (.txt, .csv, .jsonl) read into tasks, and bad lines into `file:line: reason`."""

import json
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.tasks.intake import (
    MAX_LINE_BYTES,
    LineError,
    TaskSpec,
    read_task_file,
)
from scrapeflow_dagster.engine.tasks.keys import request_key
from scrapeflow_dagster_tests.engine.tasks.helpers import errors_by_line


def split(items: list[TaskSpec | LineError]) -> tuple[list[TaskSpec], list[LineError]]:
    tasks = [i for i in items if isinstance(i, TaskSpec)]
    errors = [i for i in items if isinstance(i, LineError)]
    return tasks, errors


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
