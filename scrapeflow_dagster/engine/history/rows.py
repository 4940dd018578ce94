"""The rows the ledger records (`TaskRow`, `StepRow`, `OutputRow`, `PageRow`, `FrontierRow`)
and their spool lines (JSONL).

A spool line is what DuckDB reads back with `schema.SPOOL_COLUMNS`; it is also the last point
before DuckDB, so credentials in messages and proxy fields are removed here, for every row.
"""

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Self
from urllib.parse import urlsplit

import orjson

from scrapeflow_dagster.engine.canonical import canonical_url
from scrapeflow_dagster.engine.redact import proxy_host, redact, redact_output, redact_params
from scrapeflow_dagster.engine.state.schema import parse_stamp, utc_now

STEP_STATUSES = frozenset({"SUCCESS", "ERROR", "SKIPPED"})


@dataclass(frozen=True, slots=True)
class TaskRow:
    """One task as recorded in `tasks` (upserted on `key`; newer params win)."""

    key: str
    url: str
    method: str = "GET"
    params: dict[str, Any] = field(default_factory=dict)
    added_at: datetime = field(default_factory=utc_now)

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not isinstance(self.url, str):
            raise TypeError(f"task key and url must be str, got {self.key!r}, {self.url!r}")

    @classmethod
    def from_params(
        cls, key: str, params: dict[str, Any], *, added_at: datetime | None = None
    ) -> Self:
        """Build the row from scrapeflow task params: POST when they carry `post_payload`.

        Raises:
            ValueError: when `params` has no string `url`.
        """
        url = params.get("url")
        if not isinstance(url, str):
            raise ValueError(f"task {key!r}: params have no string 'url'")
        method = "POST" if params.get("post_payload") is not None else "GET"
        return cls(key, url, method, params, added_at if added_at is not None else utc_now())


@dataclass(frozen=True, slots=True)
class StepRow:
    """One run of one executor on one task, appended to `step_runs`.

    `ended_at` must be the value the executor writes as `<exec>_last_run` in the status file,
    so that `rebuild_from_status_dir` sees the two agree. A `run_id` of None takes the Ledger's.
    """

    key: str
    executor: str
    status: str  # 'SUCCESS' | 'ERROR' | 'SKIPPED'
    error_class: str | None = None
    error_kind: str | None = None
    message: str | None = None
    attempts: int | None = None
    http_status: int | None = None
    size: int | None = None
    md5: str | None = None
    proxy_host: str | None = None
    domain: str | None = None
    run_id: str | None = None
    started_at: datetime | None = None
    ended_at: datetime = field(default_factory=utc_now)

    def __post_init__(self) -> None:
        # Checked here, where the caller can see it, rather than as a spool file DuckDB rejects.
        if not isinstance(self.key, str) or not isinstance(self.executor, str):
            raise TypeError(
                f"step key and executor must be str, got {self.key!r}, {self.executor!r}"
            )
        if self.status not in STEP_STATUSES:
            raise ValueError(f"step status {self.status!r} is not one of {sorted(STEP_STATUSES)}")


# An output larger than this (as JSON) is recorded by its size only; its status file keeps it.
MAX_OUTPUT_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class OutputRow:
    """A successful step's output, as `outputs` holds it (one row per task and executor: the
    latest success wins, and a later failure removes it, as it does from the status file).

    `output` is the output as JSON with credentials removed (`redact_output`), or None when
    it was larger than the cap it was built with; `output_bytes` is that JSON's size.
    """

    key: str
    executor: str
    output: orjson.Fragment | None
    output_bytes: int
    url: str | None = None
    ended_at: datetime = field(default_factory=utc_now)
    # The output's `extracted` (`engine.extract`), kept whatever the output's size.
    extracted: orjson.Fragment | None = None

    @classmethod
    def of(
        cls,
        key: str,
        executor: str,
        output: Any,
        *,
        url: str | None,
        ended_at: datetime,
        max_bytes: int = MAX_OUTPUT_BYTES,
    ) -> Self:
        """The row of `executor`'s output for task `key`.

        Raises:
            TypeError: when the output holds a value JSON cannot represent (the status file
                could not have stored it either).
        """
        redacted = redact_output(_without_page_text(output))
        encoded = orjson.dumps(redacted, option=orjson.OPT_NON_STR_KEYS)
        kept = orjson.Fragment(encoded) if len(encoded) <= max_bytes else None
        extraction = redacted.get("extracted") if isinstance(redacted, Mapping) else None
        extracted = None
        if isinstance(extraction, Mapping) and isinstance(extraction.get("fields"), Mapping):
            extracted = orjson.Fragment(orjson.dumps(extraction, option=orjson.OPT_NON_STR_KEYS))
        return cls(key, executor, kept, len(encoded), url, ended_at, extracted)


# The output fields that make a step's output a parsed page (the `pages` executor's).
PAGE_OUTPUT_FIELDS = ("title", "link_count", "text_bytes")
# A parsed page's text fields: kept once, in `page_text`, not in its `outputs` row too.
PAGE_TEXT_FIELDS = frozenset({"text", "markdown"})


def _without_page_text(output: Any) -> Any:
    """A parsed page's output without its text and Markdown (`page_text` holds them)."""
    if not isinstance(output, Mapping) or not all(n in output for n in PAGE_OUTPUT_FIELDS):
        return output
    if not PAGE_TEXT_FIELDS & output.keys():
        return output
    return {name: value for name, value in output.items() if name not in PAGE_TEXT_FIELDS}


@dataclass(frozen=True, slots=True)
class PageRow:
    """One parsed page, as `pages` holds it (upserted on `key`: the latest parse wins)."""

    key: str
    url: str | None = None
    final_url: str | None = None
    http_status: int | None = None
    title: str | None = None
    text_bytes: int | None = None
    link_count: int | None = None
    content_type: str | None = None
    charset: str | None = None
    fetched_at: datetime | None = None
    parsed_at: datetime = field(default_factory=utc_now)
    # The page's readable text and Markdown as `pages` kept them (cut at its cap), for the
    # `page_text` table; their lengths before the cut.
    text: str | None = None
    text_chars: int | None = None
    markdown: str | None = None
    markdown_chars: int | None = None
    # What changed since the fetch before (`engine.revisit.diff`), for the `changes` table.
    change: Mapping[str, Any] | None = None

    @classmethod
    def from_output(
        cls, key: str, output: Mapping[str, Any], *, parsed_at: datetime
    ) -> "PageRow | None":
        """The row of a step output that is a parsed page, else None."""
        if not all(name in output for name in PAGE_OUTPUT_FIELDS):
            return None

        def text(name: str) -> str | None:
            value = output.get(name)
            return value if isinstance(value, str) else None

        def number(name: str) -> int | None:
            value = output.get(name)
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        return cls(
            key=key,
            url=text("url"),
            final_url=text("final_url"),
            http_status=number("http_status"),
            title=text("title"),
            text_bytes=number("text_bytes"),
            link_count=number("link_count"),
            content_type=text("content_type"),
            charset=text("charset"),
            fetched_at=parse_stamp(output.get("fetched_at")),
            parsed_at=parsed_at,
            text=text("text"),
            text_chars=number("text_chars"),
            markdown=text("markdown"),
            markdown_chars=number("markdown_chars"),
            change=output["change"] if isinstance(output.get("change"), Mapping) else None,
        )


# `other_host` and `refused_address` are a sitemap's entries (`crawl.sitemaps`): on another
# origin and not cross-submitted; on an internal address while learned from a public source.
FRONTIER_OUTCOMES = frozenset(
    {
        "added",
        "known",
        "out_of_scope",
        "too_deep",
        "denied",
        "over_budget",
        "disallowed",
        "other_host",
        "refused_address",
    }
)


@dataclass(frozen=True, slots=True)
class FrontierRow:
    """One link a parsed page revealed, and what discovery did with it (table `frontier`,
    one row per parent and URL: the first outcome recorded stays)."""

    crawl: str | None  # the seed's key (None: a sitemap entry that became no task)
    parent: str  # the key of the page that links here (or the URL of the sitemap listing it)
    url: str  # as the page links it, resolved against the page's base URL
    depth: int  # hops from the seed the child has (or would have)
    outcome: str  # one of FRONTIER_OUTCOMES
    child: str | None = None  # its task key, when it is (or would be) an http(s) task
    discovered_at: datetime = field(default_factory=utc_now)
    # The form de-duplication compares (None when the link is not an http(s) URL).
    canonical: str | None = None

    def __post_init__(self) -> None:
        if self.outcome not in FRONTIER_OUTCOMES:
            raise ValueError(f"frontier outcome {self.outcome!r} is not one of {FRONTIER_OUTCOMES}")


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


@dataclass(frozen=True, slots=True)
class OutputColumnsRow:
    """An executor's declared output shape (field -> DuckDB type, in order), as a run saw it."""

    executor: str
    columns: dict[str, str]
    declared_at: datetime = field(default_factory=utc_now)


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
    return orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE)


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
