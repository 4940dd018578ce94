"""A task's revisit interval, learned from what its fetches found (Nutch's
AdaptiveFetchSchedule; StormCrawler's AdaptiveScheduler counts a 304 as unchanged too).

Each new fetch is one observation: unchanged, the interval grows by `grow` (x1.4); changed, it
shrinks by `shrink` (x0.8); always within `min_seconds` .. `max_seconds`. The first fetch starts
at `initial_seconds`, or at what the page's sitemap `changefreq` says. The page is due again
`interval` after its fetch. The counts (`fetches`, `changes`, `observed_seconds`) estimate the
page's rate of change for the budget (`plan`).
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from scrapeflow_dagster.engine.state.params import (
    REVISIT_INITIAL,
    REVISIT_MAX,
    REVISIT_MIN,
    revisit_seconds,
)
from scrapeflow_dagster.engine.state.schema import parse_stamp, stamp

DAY = 86_400.0
# A sitemap's `changefreq` as a first interval (sitemaps.org's words).
CHANGEFREQ_SECONDS = {
    "always": 0.0,  # the minimum
    "hourly": 3_600.0,
    "daily": DAY,
    "weekly": 7 * DAY,
    "monthly": 30 * DAY,
    "yearly": 365 * DAY,
    "never": math.inf,  # the maximum
}


@dataclass(frozen=True, slots=True)
class RevisitPolicy:
    """The adaptive rule's bounds and factors (Nutch's defaults: 60 s .. 365 d, +40 % / -20 %)."""

    min_seconds: float = 60.0
    max_seconds: float = 365 * DAY
    initial_seconds: float = 7 * DAY  # today's refresh age: a page never judged is due as before
    grow: float = 0.4
    shrink: float = 0.2

    def __post_init__(self) -> None:
        if not 0 < self.min_seconds <= self.max_seconds:
            raise ValueError(
                f"revisit bounds need 0 < revisit_min_seconds <= revisit_max_seconds, got "
                f"{self.min_seconds} and {self.max_seconds}"
            )
        if self.initial_seconds <= 0:
            raise ValueError(
                f"revisit_initial_seconds must be positive, got {self.initial_seconds}"
            )
        if self.grow < 0 or not 0 <= self.shrink < 1:
            raise ValueError(
                f"revisit factors need grow >= 0 and 0 <= shrink < 1, got {self.grow}, "
                f"{self.shrink}"
            )

    def bounded(self, seconds: float) -> float:
        """`seconds` within the bounds."""
        return min(self.max_seconds, max(self.min_seconds, seconds))

    def for_params(self, params: Mapping[str, Any]) -> "RevisitPolicy":
        """This policy with a task's own bounds (`state.params.REVISIT_SETTINGS`) where it has
        them.

        Raises:
            ValueError: naming the param that is not a positive number of seconds.
        """
        names = {REVISIT_MIN: "min_seconds", REVISIT_MAX: "max_seconds"}
        names[REVISIT_INITIAL] = "initial_seconds"
        given = {names[name]: seconds for name, seconds in revisit_seconds(params)}
        if not given:
            return self
        # A task's own bound wins over the settings' other one (a task's max of 30 s under a
        # 60 s setting's min is a 30 s min too); a task giving both in the wrong order was
        # refused when it was stored (`state.params`).
        if "max_seconds" in given and "min_seconds" not in given:
            given["min_seconds"] = min(self.min_seconds, given["max_seconds"])
        if "min_seconds" in given and "max_seconds" not in given:
            given["max_seconds"] = max(self.max_seconds, given["min_seconds"])
        fields = {
            "min_seconds": self.min_seconds,
            "max_seconds": self.max_seconds,
            "initial_seconds": self.initial_seconds,
            "grow": self.grow,
            "shrink": self.shrink,
            **given,
        }
        return RevisitPolicy(**fields)


@dataclass(frozen=True, slots=True)
class Revisit:
    """What a task's fetches taught: stored as the `revisit` of its `pages` output."""

    observed_at: datetime  # the fetch this state counts last (naive UTC)
    interval_seconds: float
    fetches: int = 1  # fetches observed
    changes: int = 0  # of them, those that found the page changed
    observed_seconds: float = 0.0  # time between the first and the last observed fetch
    changed: bool | None = None  # what the last fetch found (None: the first fetch)
    last_changed_at: datetime | None = None

    @property
    def due_at(self) -> datetime:
        """When the page is due to be fetched again."""
        return self.observed_at + timedelta(seconds=self.interval_seconds)

    def as_output(self) -> dict[str, Any]:
        """The state as the `pages` output stores it (JSON)."""
        return {
            "observed_at": stamp(self.observed_at),
            "interval_seconds": round(self.interval_seconds, 3),
            "due_at": stamp(self.due_at),
            "fetches": self.fetches,
            "changes": self.changes,
            "observed_seconds": round(self.observed_seconds, 3),
            "changed": self.changed,
            "last_changed_at": stamp(self.last_changed_at) if self.last_changed_at else None,
        }

    @classmethod
    def from_output(cls, value: object) -> "Revisit | None":
        """The state a `pages` output stored, or None for none (or one that does not read)."""
        if not isinstance(value, Mapping):
            return None
        observed = parse_stamp(value.get("observed_at"))
        interval = value.get("interval_seconds")
        if observed is None or not isinstance(interval, int | float) or interval <= 0:
            return None
        changed = value.get("changed")
        return cls(
            observed_at=observed,
            interval_seconds=float(interval),
            fetches=_count(value.get("fetches"), 1),
            changes=_count(value.get("changes"), 0),
            observed_seconds=max(0.0, float(value.get("observed_seconds") or 0.0)),
            changed=changed if isinstance(changed, bool) else None,
            last_changed_at=parse_stamp(value.get("last_changed_at")),
        )


def _count(value: object, default: int) -> int:
    return (
        value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default
    )


def first_interval(policy: RevisitPolicy, changefreq: str | None = None) -> float:
    """The interval of a page never observed: its sitemap's `changefreq` when it has a known
    one, else the policy's initial interval; bounded."""
    hinted = CHANGEFREQ_SECONDS.get((changefreq or "").strip().lower())
    return policy.bounded(policy.initial_seconds if hinted is None else hinted)


def observe(
    previous: Revisit | None,
    *,
    changed: bool,
    fetched_at: datetime,
    policy: RevisitPolicy,
    changefreq: str | None = None,
) -> Revisit:
    """The state after a fetch at `fetched_at` that found the page `changed` (or not).

    The first fetch starts the interval (`first_interval`) and tells nothing about change. A
    fetch no later than the one `previous` counted is not a new observation: `previous` comes
    back as it is (a page parsed again from the same fetch).
    """
    if previous is None:
        return Revisit(observed_at=fetched_at, interval_seconds=first_interval(policy, changefreq))
    if fetched_at <= previous.observed_at:
        return previous
    factor = (1 - policy.shrink) if changed else (1 + policy.grow)
    since = (fetched_at - previous.observed_at).total_seconds()
    return Revisit(
        observed_at=fetched_at,
        interval_seconds=policy.bounded(previous.interval_seconds * factor),
        fetches=previous.fetches + 1,
        changes=previous.changes + (1 if changed else 0),
        observed_seconds=previous.observed_seconds + since,
        changed=changed,
        last_changed_at=fetched_at if changed else previous.last_changed_at,
    )
