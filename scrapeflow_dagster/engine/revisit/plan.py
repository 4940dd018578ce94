"""Which tasks a refresh fetches: those due, or, within a request budget per run and per host,
those whose fetch buys the most expected freshness.

A task is due when its learned interval has passed since its fetch (`rule`), when a sitemap
dates its page after that fetch (`lastmod`), or, never observed by `pages`, when it is older
than the policy's initial interval. Without a budget, a refresh fetches what is due. With one,
every observed page competes for it, due or not, by what its fetch is worth: the expected time
over the next `horizon` (a day by default, the same for every page) that the stored copy is
fresh and would not otherwise be. For a page changing as a Poisson process of rate r, fetched
`age` seconds ago, that is P(changed since) x E[time fresh within the horizon] =
(1 - e^(-r age)) (1 - e^(-r horizon)) / r. A page that changes much faster than it can be
fetched buys little (its copy is stale again within the hour, however often it is fetched);
one that never changes buys nothing (Cho and Garcia-Molina: spending requests in proportion to
change rates is worse than spending them uniformly; this spends them where they keep copies
fresh). r is estimated from the page's own fetches, -ln((n - X + 0.5) / (n + 1)) over their
mean interval, n fetches after the first and X of them changed (Cho and Garcia-Molina's
estimator, with a prior so that a page not yet seen changing is not taken for one that never
will). Pages dated by a sitemap come first: their change is known, not estimated. (On the
bundled site's week, benchmarked in `bench/bench_refresh.py`, ranking only the due pages spent
the budget on pages that change every hour and starved the weekly ones.)
"""

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from yarl import URL

from scrapeflow_dagster.engine.errors import ErrorKind
from scrapeflow_dagster.engine.polite.gate import host_of as polite_host_of
from scrapeflow_dagster.engine.revisit.rule import Revisit, RevisitPolicy, first_interval
from scrapeflow_dagster.engine.state.schema import (
    StatusData,
    error_kind,
    executor_names,
    is_success,
    last_run,
    learned_of,
)

DAY = 86_400.0
# Why a task is due (`DueTask.reason`).
LEARNED = "learned"  # its learned interval has passed
EARLY = "early"  # not due: a candidate for a budget's spare requests
AGED = "aged"  # older than a fixed age (`refresh --older-than`, the age schedule)
FAILED = "failed"  # failed, and worth asking again (`refresh --failed`)
LASTMOD = "lastmod"  # its sitemap dates it after its fetch
UNLEARNED = "unlearned"  # never observed by `pages`: older than the initial interval
# The order a budget takes them in: dated by a sitemap (known to have changed), failed ones
# asked for again (`--failed`), then the rest, due or not, by the freshness they buy.
_TIERS = {LASTMOD: 0, FAILED: 1}


@dataclass(frozen=True, slots=True)
class DueTask:
    """A task a refresh may fetch, and what its fetch is worth (see the module)."""

    key: str
    host: str
    due_at: datetime
    fetched_at: datetime
    rate_per_second: float  # estimated rate of change
    gain_seconds: float  # expected fresh time the fetch buys
    reason: str  # LEARNED, UNLEARNED, LASTMOD, EARLY, AGED or FAILED


def change_rate(revisit: Revisit) -> float:
    """The page's estimated changes per second (see the module); before a second fetch, one
    change per interval."""
    observed = revisit.fetches - 1
    if observed <= 0 or revisit.observed_seconds <= 0:
        return 1.0 / revisit.interval_seconds
    mean_interval = revisit.observed_seconds / observed
    unchanged = observed - min(revisit.changes, observed)
    return -math.log((unchanged + 0.5) / (observed + 1)) / mean_interval


def freshness_gain(rate: float, age_seconds: float, horizon_seconds: float) -> float:
    """Expected seconds of freshness a fetch now buys (see the module)."""
    if rate <= 0:
        return 0.0
    changed = -math.expm1(-rate * max(0.0, age_seconds))
    return changed * -math.expm1(-rate * horizon_seconds) / rate


def revisit_of(status: Mapping[str, Any]) -> Revisit | None:
    """The learned state in a task's status: the `revisit` of the first output that has one
    (the `pages` step's in the shipped chain)."""
    for name in executor_names(status):
        output = learned_of(status, name)  # a failed parse since keeps what it had learned
        if "revisit" in output:
            return Revisit.from_output(output["revisit"])
    return None


def host_of(url: object) -> str:
    """The host a task's URL names as per-host limits count it (`polite.gate.host_of`:
    `host:port`, the default port included, no userinfo); '' when it names none."""
    try:
        parsed = URL(url) if isinstance(url, str) else None
    except ValueError:
        return ""
    return "" if parsed is None or not parsed.host else polite_host_of(parsed)


def due_task(
    key: str,
    status: StatusData,
    fetcher: str,
    now: datetime,
    *,
    unlearned_seconds: float,
    lastmod: datetime | None = None,
    changefreq: str | None = None,
    horizon_seconds: float = DAY,
    any_time: bool = False,
) -> DueTask | None:
    """`key` as a due task when it is due at `now` (naive UTC), else None (with `any_time`, as
    an `EARLY` candidate when it is observed but not due); a task whose fetch (`fetcher`) has
    not succeeded is never due here (a failure is the retry's business).

    A task `pages` has not observed since its fetch is due `unlearned_seconds` after it (or
    after its own `revisit_initial_seconds`), as a fixed-age refresh would have it. Until a
    second fetch has taught anything, a sitemap's `changefreq` for the page (hourly, daily,
    ...) sets its interval instead.
    """
    if not is_success(status, fetcher):
        return None
    fetched = last_run(status, fetcher)
    if fetched is None:
        return None
    revisit = revisit_of(status)
    if revisit is None or revisit.observed_at < fetched:
        # Not observed since its last fetch (no parse step, or it has not run yet).
        own = RevisitPolicy(initial_seconds=max(unlearned_seconds, 1e-6))  # 0: due at once
        interval = own.for_params(status.get("params") or {}).initial_seconds
        revisit = Revisit(observed_at=fetched, interval_seconds=interval)
        reason = UNLEARNED
    else:
        reason = LEARNED
    if changefreq and revisit.fetches == 1:
        own = RevisitPolicy(initial_seconds=revisit.interval_seconds)
        hinted = first_interval(own.for_params(status.get("params") or {}), changefreq)
        revisit = dataclasses.replace(revisit, interval_seconds=hinted)
    host = host_of((status.get("params") or {}).get("url"))
    return learned_due(
        key,
        host,
        revisit,
        now,
        lastmod=lastmod,
        reason=reason,
        horizon_seconds=horizon_seconds,
        any_time=any_time and reason == LEARNED,
    )


def learned_due(
    key: str,
    host: str,
    revisit: Revisit,
    now: datetime,
    *,
    lastmod: datetime | None = None,
    reason: str = LEARNED,
    horizon_seconds: float = DAY,
    any_time: bool = False,
) -> DueTask | None:
    """The page `key` at `host` with the learned state `revisit` as a due task when it is due
    at `now` (its interval has passed, or its sitemap `lastmod` is after its fetch), else None,
    or with `any_time` an `EARLY` candidate; its gain counted over `horizon_seconds`. What a
    refresh plans by, whether the state comes from a status file or a simulation."""
    due_at, fetched = revisit.due_at, revisit.observed_at
    if lastmod is not None and lastmod > fetched:
        due_at, reason = fetched, LASTMOD
    if due_at > now:
        if not any_time:
            return None
        reason = EARLY
    rate = change_rate(revisit) if reason != UNLEARNED else 1.0 / revisit.interval_seconds
    age = (now - fetched).total_seconds()
    return DueTask(
        key=key,
        host=host,
        due_at=due_at,
        fetched_at=fetched,
        rate_per_second=rate,
        gain_seconds=freshness_gain(rate, age, horizon_seconds),
        reason=reason,
    )


def due_tasks(
    statuses: Iterable[tuple[str, StatusData]],
    fetcher: str,
    now: datetime,
    *,
    unlearned_seconds: float,
    lastmods: Mapping[str, datetime] | None = None,
    changefreqs: Mapping[str, str] | None = None,
    horizon_seconds: float = DAY,
    any_time: bool = False,
    with_failed: bool = False,
) -> list[DueTask]:
    """The tasks among `statuses` due at `now` (see `due_task`; with `any_time`, every
    observed task, for a budget to choose among; with `with_failed`, as `FAILED` those whose
    fetch failed with a kind that asking again may fix), in one pass; `lastmods` are the
    sitemap dates by key (aware or naive UTC), `changefreqs` their `changefreq`s."""
    dated = {
        key: (when.astimezone(UTC).replace(tzinfo=None) if when.tzinfo else when)
        for key, when in (lastmods or {}).items()
    }
    found = []
    for key, status in statuses:
        task = due_task(
            key,
            status,
            fetcher,
            now,
            unlearned_seconds=unlearned_seconds,
            lastmod=dated.get(key),
            changefreq=(changefreqs or {}).get(key),
            horizon_seconds=horizon_seconds,
            any_time=any_time,
        )
        if task is None and with_failed and worth_asking_again(status, fetcher):
            host = host_of((status.get("params") or {}).get("url"))
            task = DueTask(key, host, now, now, 0.0, 0.0, FAILED)
        if task is not None:
            found.append(task)
    return found


# Failures that asking again cannot fix: a permanent answer (a 404, a body too large, a bad
# URL), a robots.txt refusal.
_NEVER_AGAIN = frozenset({ErrorKind.PERMANENT.value, ErrorKind.DISALLOWED.value})


def worth_asking_again(status: Mapping[str, Any], fetcher: str) -> bool:
    """Whether `fetcher` failed for the task with a kind that asking again may fix."""
    if is_success(status, fetcher):
        return False
    kind = error_kind(status, fetcher)
    return kind is not None and kind not in _NEVER_AGAIN


def plan_refresh(
    due: Iterable[DueTask], *, budget: int | None = None, host_budget: int | None = None
) -> list[DueTask]:
    """The tasks to fetch among `due`: those a sitemap dated first, then failed ones asked for
    again, then the rest by the freshness they buy (`EARLY` candidates only when they buy
    some; the longest overdue first among equals), at most `budget` in all and `host_budget`
    per host (None: no limit).

    Raises:
        ValueError: naming the budget when it is negative.
    """
    for name, value in (("budget", budget), ("host budget", host_budget)):
        if value is not None and value < 0:
            raise ValueError(f"the {name} must be a number of requests >= 0, got {value}")
    ranked = sorted(
        due,
        key=lambda task: (_TIERS.get(task.reason, 2), -task.gain_seconds, task.due_at, task.key),
    )
    chosen: list[DueTask] = []
    per_host: dict[str, int] = {}
    for task in ranked:
        if budget is not None and len(chosen) >= budget:
            break
        if task.reason == EARLY and task.gain_seconds <= 0:
            continue  # not due, and it would buy nothing
        if host_budget is not None and per_host.get(task.host, 0) >= host_budget:
            continue
        per_host[task.host] = per_host.get(task.host, 0) + 1
        chosen.append(task)
    return chosen
