"""Which failed tasks to try again, and how to group them into few runs.

Plain functions over status data, so sensors stay thin and the rules are testable alone.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from scrapeflow_dagster.engine.status import StatusData, is_success


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
    retry_kinds: tuple[str, ...] = ("transient", "blocked", "proxy", "upstream")


def _parse_time(value: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        return None


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
    large, bad URL) is never retried, so a permanent failure cannot loop forever. A step after
    others (`requires`) that found a block page gains nothing from re-reading the same body:
    it asks for a new fetch (REFETCH), and is due again once an upstream step ran after it.
    """
    if status is None or f"{name}_status" not in status:
        return Decision.DUE
    if is_success(status, name):
        return Decision.DONE
    kind = status.get(f"{name}_error_kind") or "transient"
    failures = int(status.get(f"{name}_failures") or 1)
    if kind not in rules.retry_kinds or failures >= rules.max_failed_runs:
        return Decision.GIVE_UP
    own_last_run = str(status.get(f"{name}_last_run", ""))
    if any(str(status.get(f"{up}_last_run", "")) > own_last_run for up in requires):
        return Decision.DUE  # new upstream data: worth a try at once
    last_run = _parse_time(own_last_run)
    delay = min(rules.backoff_max_seconds, rules.backoff_base_seconds * 2 ** (failures - 1))
    if last_run is not None and now < last_run + timedelta(seconds=delay):
        return Decision.WAIT
    return Decision.REFETCH if requires and kind == "blocked" else Decision.DUE


def plan_ranges(
    ordered_keys: Sequence[str],
    due: Iterable[str],
    *,
    passable: set[str],
    max_gap: int = 200,
    max_partitions_per_run: int = 10_000,
) -> list[tuple[str, str]]:
    """Group `due` keys into contiguous ranges of `ordered_keys` (Dagster runs take ranges).

    Two due keys share a range when the keys between them are all in `passable` (already
    succeeded: the run skips them cheaply) and there are at most `max_gap` of them; a key that
    is waiting or given up is never swept into a range.

    Returns:
        `(first_key, last_key)` pairs in partition order.
    """
    due_set = set(due)
    ranges: list[tuple[str, str]] = []
    start: int | None = None
    last_due = -1
    for index, key in enumerate(ordered_keys):
        if key in due_set:
            too_long = start is not None and index - start + 1 > max_partitions_per_run
            if start is None or too_long:
                if start is not None:
                    ranges.append((ordered_keys[start], ordered_keys[last_due]))
                start = index
            last_due = index
        elif start is not None and (key not in passable or index - last_due > max_gap):
            ranges.append((ordered_keys[start], ordered_keys[last_due]))
            start = None
    if start is not None:
        ranges.append((ordered_keys[start], ordered_keys[last_due]))
    return ranges
