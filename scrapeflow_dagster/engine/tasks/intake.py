"""Reading task files (.txt, .csv, .jsonl) into validated tasks, with per-line errors.

A bad line never stops the good lines beside it: each problem becomes a `LineError` naming
the file and line, and every valid line still becomes a task.
"""

import csv
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from scrapeflow_dagster.engine.errors import InvalidTaskError
from scrapeflow_dagster.engine.state.params import normalise_crawl_params
from scrapeflow_dagster.engine.state.schema import Params
from scrapeflow_dagster.engine.state.trust import trust_of
from scrapeflow_dagster.engine.tasks.keys import (
    request_fingerprint,
    request_key,
    validate_key,
    validate_url,
)

MAX_LINE_BYTES = 1024 * 1024  # longer lines are refused without being held in memory whole
SUFFIXES = (".txt", ".csv", ".jsonl")
_JSON_PARAMS = ("post_payload", "cookies", "headers")
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """A valid task read from `path` at `line`."""

    key: str
    params: Params
    path: Path
    line: int
    # For a key derived from the request: the key such a task had before keys became
    # readable (the bare fingerprint). A task stored under it keeps it: stored keys never change.
    legacy_key: str | None = None


@dataclass(frozen=True, slots=True)
class LineError:
    """Why line `line` of `path` was refused (line 0: the whole file)."""

    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


Item = TaskSpec | LineError


def _lines(stream: BinaryIO, path: Path) -> Iterator[tuple[int, str] | LineError]:
    number = 0
    while True:
        raw = stream.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):  # skip the rest of the long line
                raw = stream.readline(MAX_LINE_BYTES)
            yield LineError(path, number, f"line is longer than {MAX_LINE_BYTES} bytes")
            continue
        if number == 1 and raw.startswith(_BOM):  # Excel and Notepad save UTF-8 with a BOM
            raw = raw[len(_BOM) :]
        try:
            yield number, raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError as exc:
            yield LineError(path, number, f"not UTF-8: {exc}")


def _json_param(name: str, value: Any) -> Any:
    """A param given as JSON text (a CSV cell) parsed; other values as they are."""
    if not isinstance(value, str):
        return value
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise InvalidTaskError(f"{name} is not valid JSON: {exc}") from None


def build_task(fields: dict[str, Any], path: Path, line: int) -> Item:
    """Validate one record (`url`, optional `key`, other params) into a task or an error."""
    try:
        url = fields.get("url")
        validate_url(url)
        params: Params = {k: v for k, v in fields.items() if k != "key" and v not in (None, "")}
        for name in _JSON_PARAMS:
            if name in params:
                params[name] = _json_param(name, params[name])
        for name in ("cookies", "headers"):
            if name in params and not isinstance(params[name], dict):
                raise InvalidTaskError(f"{name} must be an object")
            for field, value in params.get(name, {}).items():
                # aiohttp refuses anything else at fetch time, on every try: refused here.
                if not isinstance(value, str):
                    raise InvalidTaskError(
                        f"{name} must map names to strings: {field!r} is {type(value).__name__}"
                    )
        if "verify_tls" in params and isinstance(params["verify_tls"], str):
            params["verify_tls"] = params["verify_tls"].strip().lower() not in ("0", "false", "no")
        try:
            params = normalise_crawl_params(params)
            trust_of(params)  # a typo must neither open the address guard nor close it
        except ValueError as exc:
            raise InvalidTaskError(str(exc)) from None
        if fields.get("key"):
            return TaskSpec(validate_key(fields["key"]), params, path, line)
        method = "POST" if params.get("post_payload") is not None else "GET"
        body = params.get("post_payload")
        key = request_key(str(url), method=method, body=body)
        legacy = request_fingerprint(str(url), method=method, body=body)
        return TaskSpec(validate_key(key), params, path, line, legacy_key=legacy)
    except (InvalidTaskError, orjson.JSONDecodeError) as exc:
        return LineError(path, line, str(exc))


# A line parser turns one non-blank line into a record, an error message, or None (skip it).
LineParser = Callable[[str], "dict[str, Any] | str | None"]


class _StopFile(Exception):
    """Raised by a line parser when the rest of the file cannot be read (a bad CSV header)."""


def _read_records(stream: BinaryIO, path: Path, parse: LineParser) -> Iterator[Item]:
    """The loop every format shares: skip blank lines, pass line errors on, build tasks."""
    for item in _lines(stream, path):
        if isinstance(item, LineError):
            yield item
            continue
        number, text = item
        if not text.strip():
            continue
        try:
            record = parse(text)
        except _StopFile as stop:
            yield LineError(path, number, str(stop))
            return
        if isinstance(record, str):
            yield LineError(path, number, record)
        elif record is not None:
            yield build_task(record, path, number)


def _parse_txt(text: str) -> dict[str, Any] | None:
    text = text.strip()
    return None if text.startswith("#") else {"url": text}


def _parse_jsonl(text: str) -> dict[str, Any] | str:
    try:
        record = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        return f"not valid JSON: {exc}"
    if not isinstance(record, dict):
        return "a JSON object with a 'url' is expected"
    return record


def _csv_parser() -> LineParser:
    """A parser whose first line is the header, which must name a `url` column."""
    header: list[str] = []

    def parse(text: str) -> dict[str, Any] | str | None:
        try:
            # strict: a stray or unclosed quote is an error, not a silently mangled field
            row = next(csv.reader(io.StringIO(text), strict=True))
        except (csv.Error, StopIteration) as exc:
            return f"malformed CSV: {exc}"
        if not header:
            header.extend(h.strip() for h in row)
            if "url" not in header:
                raise _StopFile("CSV header needs a 'url' column")
            return None
        if len(row) != len(header):
            return f"{len(row)} fields where the header has {len(header)}"
        return dict(zip(header, row, strict=True))

    return parse


def read_task_file(path: Path) -> Iterator[Item]:
    """Yield a `TaskSpec` per valid line of `path` and a `LineError` per bad one.

    `.txt`: one URL per line (`#` comments). `.csv`: a header with `url` and optionally `key`
    and params (`post_payload`, `cookies`, `headers` as JSON; `country`; `verify_tls`; the crawl
    settings `max_depth`, `scope`, `allow`, `deny` (a regex or a JSON list), `max_pages`).
    `.jsonl`: one object per line with the same fields.
    """
    path = Path(path)
    parsers = {".txt": lambda: _parse_txt, ".csv": _csv_parser, ".jsonl": lambda: _parse_jsonl}
    make_parser = parsers.get(path.suffix.lower())
    if make_parser is None:
        yield LineError(path, 0, f"unknown task file type {path.suffix!r} (use {SUFFIXES})")
        return
    try:
        with path.open("rb") as stream:
            yield from _read_records(stream, path, make_parser())
    except OSError as exc:
        yield LineError(path, 0, f"cannot read: {exc.strerror or exc}")
