"""The spool lines (JSONL) of the rows the ledger records (`rows`), one function per kind.

A spool line is what DuckDB reads back with `database.spool_sql.SPOOL_COLUMNS`; it is also the
last point before DuckDB, so credentials in messages and proxy fields are removed here, for
every row.
"""

import functools
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import orjson

from scrapeflow_dagster.engine.canonical import canonical_url
from scrapeflow_dagster.engine.history.recording.rows import (
    FrontierRow,
    OutputColumnsRow,
    OutputRow,
    PageRow,
    StepRow,
    TaskRow,
)
from scrapeflow_dagster.engine.redact import proxy_host, redact, redact_output, redact_params
from scrapeflow_dagster.engine.state.schema import parse_stamp


def domain_of(url: str | None) -> str | None:
    """The host name of `url` (lower case), or None when it has none or does not parse."""
    if not url:
        return None
    # Recorded for every task: the URL's authority is parsed once per distinct value.
    scheme, sep, rest = url.partition("://")
    return _hostname(rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]) if sep else None


@functools.lru_cache(maxsize=4096)
def _hostname(authority: str) -> str | None:
    try:
        return urlsplit(f"http://{authority}").hostname
    except ValueError:
        return None


def task_line(row: TaskRow, seq: int, run_id: str | None) -> bytes:
    """The spool line of a task row; `seq` orders it among its Ledger's lines.

    Raises:
        TypeError: when `row.params` holds a value JSON cannot represent.
    """
    line = {
        "kind": "t",
        "seq": seq,
        "key": row.key,
        # Credentials stay in the status file: the URL's password, tokens in its query, cookie
        # and auth header values and secret payload fields never reach DuckDB.
        "url": redact(row.url),
        "canonical_url": _canonical_or_none(row.url),
        "method": row.method,
        "domain": domain_of(row.url),
        "params": redact_params(row.params),
        # parse_stamp turns an aware datetime into the naive UTC that DuckDB columns hold.
        "added_at": parse_stamp(row.added_at),
    }
    return orjson.dumps(line, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE)


def _canonical_or_none(url: str) -> str | None:
    """The canonical form of a task's URL (redacted), None when it is not a valid URL: a
    stored task is recorded whatever its URL, and its status says why it cannot run."""
    try:
        return redact(canonical_url(url))
    except ValueError:
        return None


def step_line(row: StepRow, seq: int, run_id: str | None) -> bytes:
    """The spool line of a step row; a row without a run id takes `run_id`."""
    line = {
        "kind": "s",
        "seq": seq,
        "key": row.key,
        "executor": row.executor,
        "status": row.status,
        "error_class": row.error_class,
        "error_kind": row.error_kind,
        # Messages quote URLs and headers; credentials in them must never reach DuckDB.
        "message": redact(row.message) if row.message else row.message,
        "attempts": row.attempts,
        "http_status": row.http_status,
        "size": row.size,
        "md5": row.md5,
        "proxy_host": _host_only(row.proxy_host),
        "domain": row.domain,
        "run_id": row.run_id if row.run_id is not None else run_id,
        "started_at": parse_stamp(row.started_at),
        "ended_at": parse_stamp(row.ended_at),
    }
    return orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE)


def output_line(row: OutputRow, seq: int, run_id: str | None) -> bytes:
    """The spool line of a step's output (its task's URL redacted, as in `tasks`)."""
    line = {
        "kind": "o",
        "seq": seq,
        "key": row.key,
        "executor": row.executor,
        "url": redact(row.url) if row.url else row.url,
        "output": row.output,
        "output_bytes": row.output_bytes,
        "extracted": row.extracted,
        "ended_at": parse_stamp(row.ended_at),
        "run_id": run_id,
    }
    return orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE)


def output_columns_line(row: OutputColumnsRow, seq: int, run_id: str | None) -> bytes:
    """The spool line of an executor's declared output shape."""
    line = {
        "kind": "c",
        "seq": seq,
        "key": row.executor,
        "executor": row.executor,
        "output": row.columns,
        "ended_at": parse_stamp(row.declared_at),
        "run_id": run_id,
    }
    return orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE)


def page_line(row: PageRow, seq: int, run_id: str | None) -> bytes:
    """The spool line of a parsed page (URLs redacted: a query may carry a token)."""
    line = {
        "kind": "p",
        "seq": seq,
        "key": row.key,
        "url": redact(row.url) if row.url else row.url,
        "final_url": redact(row.final_url) if row.final_url else row.final_url,
        "http_status": row.http_status,
        "title": row.title,
        "text_bytes": row.text_bytes,
        "link_count": row.link_count,
        "content_type": row.content_type,
        "charset": row.charset,
        "fetched_at": parse_stamp(row.fetched_at),
        "ended_at": parse_stamp(row.parsed_at),
        "run_id": run_id,
        "text": row.text,
        "text_chars": row.text_chars,
        "markdown": row.markdown,
        "markdown_chars": row.markdown_chars,
        # Its links and text pass the outputs' redaction: a link's query may carry a token.
        "change": redact_output(row.change) if row.change is not None else None,
    }
    if row.main_content is not None:  # absent, not null, when off: a default line stays as it was
        line.update(_main_content(row.main_content))
    return orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE)


def _main_content(main: Mapping[str, Any]) -> dict[str, Any]:
    """The spool fields of a page's main content: its text and Markdown as top-level strings
    (DuckDB's JSON reader holds an object's whole text in memory: 200 pages' main content in
    one object each ran out of the ingest's 64 MB), its metadata and lengths as one object."""
    rest = {name: value for name, value in main.items() if name not in ("text", "markdown")}
    # The canonical URL the page states may carry a token, as its own URL may.
    canonical = rest.get("canonical_url")
    rest["canonical_url"] = redact(canonical) if isinstance(canonical, str) else None
    return {
        "main_text": main.get("text"),
        "main_markdown": main.get("markdown"),
        "main_content": rest,
    }


def _host_only(proxy: str | None) -> str | None:
    # Proxies should arrive as `host:port`; a URL or `user:pass@host` (an old or hand-edited
    # status file) is cut down to that, so no proxy credential reaches DuckDB.
    if proxy and ("@" in proxy or "://" in proxy):
        return proxy_host(proxy if "://" in proxy else f"http://{proxy}")
    return proxy


def frontier_line(row: FrontierRow, seq: int, run_id: str | None) -> bytes:
    """The spool line of a frontier row (URL redacted: a query may carry a token)."""
    line = {
        "kind": "f",
        "seq": seq,
        "key": row.child,
        "url": redact(row.url),
        "canonical_url": redact(row.canonical) if row.canonical else None,
        "crawl": row.crawl,
        "parent": row.parent,
        "depth": row.depth,
        "outcome": row.outcome,
        "ended_at": parse_stamp(row.discovered_at),
    }
    return orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE)
