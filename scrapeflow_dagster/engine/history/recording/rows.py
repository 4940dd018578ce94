"""The rows the ledger records (`TaskRow`, `StepRow`, `OutputRow`, `PageRow`, `FrontierRow`,
`OutputColumnsRow`); `spool_lines` turns each into its spool line.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Self

import orjson

from scrapeflow_dagster.engine.redact import redact_output
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
# A parsed page's text fields: kept once, in `page_text` (its main content's in
# `main_content`), not in its `outputs` row too.
PAGE_TEXT_FIELDS = frozenset({"text", "markdown"})
MAIN_CONTENT_FIELD = "main_content"


def _without_page_text(output: Any) -> Any:
    """A parsed page's output without its text and Markdown (`page_text` holds them) and its
    main content's (`main_content` holds them; its metadata and lengths stay)."""
    if not isinstance(output, Mapping) or not all(n in output for n in PAGE_OUTPUT_FIELDS):
        return output
    main = output.get(MAIN_CONTENT_FIELD)
    if not PAGE_TEXT_FIELDS & output.keys() and not isinstance(main, Mapping):
        return output
    kept = {name: value for name, value in output.items() if name not in PAGE_TEXT_FIELDS}
    if isinstance(main, Mapping):
        kept[MAIN_CONTENT_FIELD] = {n: v for n, v in main.items() if n not in PAGE_TEXT_FIELDS}
    return kept


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
    # The page's main content and metadata (`page_main_content`), for the `main_content` table.
    main_content: Mapping[str, Any] | None = None

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
            main_content=main
            if isinstance(main := output.get(MAIN_CONTENT_FIELD), Mapping)
            else None,
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


@dataclass(frozen=True, slots=True)
class OutputColumnsRow:
    """An executor's declared output shape (field -> DuckDB type, in order), as a run saw it."""

    executor: str
    columns: dict[str, str]
    declared_at: datetime = field(default_factory=utc_now)
