"""The status file's schema: its field names, its timestamps, and what they mean.

The one owner of the format. A status file holds `name`, `params`, and per executor
`<name>` (its output), `<name>_status` (`SUCCESS` or `ERROR <ExceptionClass>::<message>`) and
`<name>_last_run` (scrapeflow's format: naive UTC `YYYY-MM-DD HH:MM:SS[.ffffff]`). This
project adds `<name>_attempts`, `<name>_error_kind`, `<name>_failures` (failed runs in a
row), `<name>_started`, `<name>_proxy` (host:port only) and `<name>_kept` (what a failure
keeps of the last output: `KEPT_ACROSS_FAILURES`); files written by scrapeflow load.

Every other module reads and writes these fields through the functions here, and compares
times as datetimes (`parse_stamp`), never as strings.
"""

import functools
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict

StatusData = dict[str, Any]
Params = dict[str, Any]  # crawl params: `engine.state.params`


STATUS_SUFFIX = ".status.json"
SUCCESS = "SUCCESS"
ERROR_PREFIX = "ERROR"
# The text of scrapeflow's HttpStatusError (`engine.errors`), as it stands in `<name>_status`.
_HTTP_STATUS_IN_MESSAGE = re.compile(r"HTTP response (\d{3})")
_FIELD_SUFFIXES = (
    "_kept",
    "_status",
    "_started",
    "_last_run",
    "_attempts",
    "_failures",
    "_error_kind",
    "_proxy",
)


class StatusModel(BaseModel):
    """The part of a status file every reader relies on; executor fields pass through."""

    model_config = ConfigDict(extra="allow")

    name: str | None = None
    params: dict[str, Any]


def stamp(moment: datetime | None = None) -> str:
    """`moment` (default now) in the `_last_run` format: naive UTC, as scrapeflow wrote it."""
    if moment is None:
        moment = datetime.now(UTC)
    elif moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return str(moment.replace(tzinfo=None))


def parse_stamp(value: object) -> datetime | None:
    """A stamp read back as a naive UTC datetime; None when absent or not a time."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed.astimezone(UTC).replace(tzinfo=None) if parsed.tzinfo else parsed


def utc_now() -> datetime:
    """Now, as the naive UTC datetime that `parse_stamp` returns."""
    return datetime.now(UTC).replace(tzinfo=None)


class StepFields:
    """The field names of one executor in a status file (`fields_of(name)` caches them)."""

    __slots__ = (
        "attempts",
        "error_kind",
        "failures",
        "kept",
        "last_run",
        "name",
        "proxy",
        "started",
        "status",
    )

    def __init__(self, name: str) -> None:
        self.name = name
        self.status = f"{name}_status"
        self.started = f"{name}_started"
        self.last_run = f"{name}_last_run"
        self.attempts = f"{name}_attempts"
        self.failures = f"{name}_failures"
        self.error_kind = f"{name}_error_kind"
        self.proxy = f"{name}_proxy"
        self.kept = f"{name}_kept"


# What a failure keeps of a step's last output (as `<name>_kept`), where the output had them:
# what a page's fetches taught (`engine.revisit`: its state, digest, and the parse a change is
# diffed against), so one failed parse neither forgets a page's rate nor hides a change.
KEPT_ACROSS_FAILURES = ("revisit", "text_digest", "body_md5", "title", "links", "extracted")


@functools.cache
def fields_of(name: str) -> StepFields:
    """The field names of executor `name`."""
    return StepFields(name)


def new_status(key: str, params: Params) -> StatusData:
    """A fresh status for a task that has none yet (the key is validated by the caller)."""
    return {"name": key, "params": dict(params)}


def is_success(status: Mapping[str, Any], name: str) -> bool:
    """True when `name` last succeeded and its output is present (scrapeflow's skip rule)."""
    return name in status and status.get(fields_of(name).status) == SUCCESS


def is_error(status: Mapping[str, Any], name: str) -> bool:
    """True when `name` last failed."""
    value = status.get(fields_of(name).status)
    return isinstance(value, str) and value.startswith(ERROR_PREFIX)


def has_run(status: Mapping[str, Any], name: str) -> bool:
    """True when `name` has a recorded outcome (success or error)."""
    return fields_of(name).status in status


def executor_names(status: Mapping[str, Any]) -> list[str]:
    """The executors a status file has a record of, in file order."""
    names = []
    for field, value in status.items():
        if not field.endswith("_status") or not isinstance(value, str):
            continue
        if value == SUCCESS or value.startswith(ERROR_PREFIX):
            names.append(field[: -len("_status")])
    return names


def is_step_field(field: str, executor: str) -> bool:
    """Whether `field` is the output or one of the bookkeeping fields of `executor`."""
    return field == executor or any(field == executor + s for s in _FIELD_SUFFIXES)


def last_run(status: Mapping[str, Any], name: str) -> datetime | None:
    """When `name` last ended (naive UTC), or None when it never ran."""
    return parse_stamp(status.get(fields_of(name).last_run))


def started(status: Mapping[str, Any], name: str) -> datetime | None:
    """When `name` last started (naive UTC), or None when unknown."""
    return parse_stamp(status.get(fields_of(name).started))


def failures(status: Mapping[str, Any], name: str) -> int:
    """Failed runs in a row of `name` (0 after a success; 1 for a scrapeflow error)."""
    value = status.get(fields_of(name).failures)
    if value is None:
        return 1 if is_error(status, name) else 0
    return int(value)


def attempts(status: Mapping[str, Any], name: str) -> int | None:
    """Tries of the last run of `name` (None when not recorded)."""
    value = status.get(fields_of(name).attempts)
    return int(value) if isinstance(value, int | float) else None


def error_kind(status: Mapping[str, Any], name: str) -> str | None:
    """The error kind of the last failure of `name` (None after a success or if unknown)."""
    value = status.get(fields_of(name).error_kind)
    return str(value) if value else None


def error_parts(status: Mapping[str, Any], name: str) -> tuple[str | None, str | None]:
    """`(error_class, message)` of the last failure of `name`, or `(None, None)`."""
    value = status.get(fields_of(name).status)
    if not isinstance(value, str) or not value.startswith(ERROR_PREFIX):
        return None, None
    text = value[len(ERROR_PREFIX) :].strip()
    error_class, sep, message = text.partition("::")
    return (error_class or None, message) if sep else (None, text)


def proxy_of(status: Mapping[str, Any], name: str) -> str | None:
    """The proxy (host:port) of the last failure of `name`, if one was used."""
    value = status.get(fields_of(name).proxy)
    return value if isinstance(value, str) else None


def learned_of(status: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """What `name`'s outputs taught about the task (`KEPT_ACROSS_FAILURES`): its output when
    it succeeded, else what its last failure kept of the output before; {} for none."""
    if is_success(status, name):
        output = status.get(name)
    else:
        output = status.get(fields_of(name).kept)
    return output if isinstance(output, Mapping) else {}


def output_of(status: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """The output `name` last succeeded with, when it is an object (as scrape's is); else `{}`."""
    value = status.get(name)
    if not isinstance(value, Mapping) or status.get(fields_of(name).status) != SUCCESS:
        return {}
    return value


def http_status_of(status: Mapping[str, Any], name: str) -> int | None:
    """The HTTP status `name` last ended with, or None when it recorded none.

    After a success it is the output's `http_status`; after a failure, the `N` of an
    `HTTP response N` error message, the only place a failed step keeps it.
    """
    value = _int_or_none(output_of(status, name).get("http_status"))
    if value is not None:
        return value
    _, message = error_parts(status, name)
    found = _HTTP_STATUS_IN_MESSAGE.search(message) if message else None
    return int(found.group(1)) if found else None


def size_of(status: Mapping[str, Any], name: str) -> int | None:
    """The body size in bytes of the output `name` last succeeded with (output `size`)."""
    return _int_or_none(output_of(status, name).get("size"))


def md5_of(status: Mapping[str, Any], name: str) -> str | None:
    """The md5 hex digest of the output `name` last succeeded with (output `content`)."""
    value = output_of(status, name).get("content")
    return value if isinstance(value, str) else None


def _int_or_none(value: object) -> int | None:
    # bool is an int subclass, but `true` in an output is no count or status.
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def ran_after(status: Mapping[str, Any], upstream: str, name: str) -> bool:
    """Whether `upstream` ended after `name` did (then `name`'s output is stale)."""
    up, own = last_run(status, upstream), last_run(status, name)
    return up is not None and (own is None or up > own)


def is_fresh(
    status: Mapping[str, Any],
    name: str,
    *,
    requires: Sequence[str] = (),
    max_age_seconds: float | None = None,
    now: datetime | None = None,
) -> bool:
    """Succeeded, not built from older upstream output, and not older than `max_age_seconds`."""
    if not is_success(status, name):
        return False
    if any(ran_after(status, up, name) for up in requires):
        return False
    if max_age_seconds is None:
        return True
    ended = last_run(status, name)
    cutoff = (now or utc_now()) - timedelta(seconds=max_age_seconds)
    return ended is not None and ended >= cutoff


def record_start(status: StatusData, name: str, moment: datetime) -> None:
    """Note that `name` started at `moment`."""
    status[fields_of(name).started] = stamp(moment)


def record_success(
    status: StatusData, name: str, output: object, *, ended: datetime, attempts: int
) -> None:
    """Store `name`'s output and its success; clears the failure count and kind."""
    fields = fields_of(name)
    status[name] = output
    status.pop(fields.kept, None)
    status[fields.status] = SUCCESS
    status[fields.last_run] = stamp(ended)
    status[fields.attempts] = attempts
    status[fields.failures] = 0
    status.pop(fields.error_kind, None)


def record_error(
    status: StatusData,
    name: str,
    *,
    error_class: str,
    message: str,
    kind: str,
    ended: datetime,
    attempts: int,
    proxy: str | None = None,
) -> None:
    """Store a failure of `name`: drops its output (keeping `KEPT_ACROSS_FAILURES` of it),
    counts one more failed run in a row."""
    fields = fields_of(name)
    dropped = status.pop(name, None)
    if isinstance(dropped, Mapping) and "revisit" in dropped:
        status[fields.kept] = {k: dropped[k] for k in KEPT_ACROSS_FAILURES if k in dropped}
    status[fields.status] = f"{ERROR_PREFIX} {error_class}::{message}"
    status[fields.last_run] = stamp(ended)
    status[fields.attempts] = attempts
    status[fields.error_kind] = kind
    status[fields.failures] = int(status.get(fields.failures, 0)) + 1
    if proxy:
        status[fields.proxy] = proxy
