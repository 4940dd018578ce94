"""Between runs: which failed steps to try again now, later, or never.

Plain functions over status data, so sensors stay thin and the rules are testable alone.
(Retries inside one run, per request, are `retry.requests`.)
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from scrapeflow_dagster.engine.errors import ErrorKind
from scrapeflow_dagster.engine.state.schema import (
    StatusData,
    error_kind,
    failures,
    has_run,
    is_success,
    last_run,
    ran_after,
)


class Decision(StrEnum):
    """What to do with one task's step now."""

    DUE = "due"  # try again now
    WAIT = "wait"  # try again later (backoff not over)
    GIVE_UP = "give_up"  # permanent failure or attempt cap reached
    DONE = "done"  # succeeded, nothing to do
    REFETCH = "refetch"  # a later step found a block page: fetch again before retrying it


@dataclass(frozen=True, slots=True)
class RetryRules:
    """Attempt cap and backoff between runs (not between requests: that is `RetryPolicy`)."""

    max_failed_runs: int = 5  # failed runs in a row after which a task is left alone
    backoff_base_seconds: float = 60.0  # wait after the 1st failed run; doubles each time
    backoff_max_seconds: float = 6 * 3600.0
    # Not PERMANENT nor DISALLOWED (robots.txt forbids the URL): asking again cannot help.
    retry_kinds: tuple[str, ...] = (
        ErrorKind.TRANSIENT,
        ErrorKind.BLOCKED,
        ErrorKind.PROXY,
        ErrorKind.UPSTREAM,
    )


def decide(
    status: StatusData | None,
    name: str,
    rules: RetryRules,
    now: datetime,
    *,
    requires: Sequence[str] = (),
) -> Decision:
    """Decide for executor `name` of one task (`now` naive UTC, like `_last_run`).

    A missing status or a step that never ran is due; a permanent error (other 4xx, body too
    large, bad URL) or a URL robots.txt disallows is never retried, so a permanent failure
    cannot loop forever. A step after others (`requires`) that found a block page gains
    nothing from re-reading the same body: it asks for a new fetch (REFETCH), and is due again
    once an upstream step ran after it.
    """
    if status is None or not has_run(status, name):
        return Decision.DUE
    if is_success(status, name):
        return Decision.DONE
    kind = error_kind(status, name) or ErrorKind.TRANSIENT
    failed_runs = max(1, failures(status, name))
    if kind not in rules.retry_kinds or failed_runs >= rules.max_failed_runs:
        return Decision.GIVE_UP
    if any(ran_after(status, up, name) for up in requires):
        return Decision.DUE  # new upstream data: worth a try at once
    ended = last_run(status, name)
    delay = min(rules.backoff_max_seconds, rules.backoff_base_seconds * 2 ** (failed_runs - 1))
    if ended is not None and now < ended + timedelta(seconds=delay):
        return Decision.WAIT
    return Decision.REFETCH if requires and kind == ErrorKind.BLOCKED else Decision.DUE
