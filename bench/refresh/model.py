"""The simulated week's policies and what each one stored: a policy's copy of each page, its
fetches and tallies, and what a fetch's answer records (checked against the site's truth)."""

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from scrapeflow_dagster.engine.revisit.rule import Revisit, RevisitPolicy, observe
from scrapeflow_dagster.site.content.changing import changefreq, rate_per_hour, version_at

GOAL_RATIO = 1.5
HOUR = 3600.0
SEED = 0  # the site's default seed (`Site` starts it with the defaults)
CLOCK_ZERO = datetime(2026, 1, 1)  # site second 0 as the schedulers' naive-UTC clock
CLASSES = ("hourly", "daily", "weekly", "never")
FIXED, LEARNED, FILL = "fixed", "learned, due only", "learned, budget"
ORACLE = "oracle greedy (true rates)"
POLICIES = (FIXED, LEARNED, FILL, ORACLE)


@dataclass(slots=True)
class Stored:
    """A policy's stored copy of one page and what its fetches taught."""

    etag: str
    version: int
    digest: str
    fetched_at: float  # site seconds of the last fetch
    revisit: Revisit


@dataclass(slots=True)
class Fetched:
    """One fetch's answer."""

    etag: str
    version: int
    digest: str | None  # None: a 304


@dataclass
class PolicyRun:
    """One policy's pages, fetches and tallies over a scenario."""

    name: str
    stored: dict[int, Stored] = field(default_factory=dict)
    history: dict[int, list[tuple[float, int]]] = field(default_factory=dict)  # (time, version)
    requests: int = 0
    requests_by_class: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CLASSES, 0))
    not_modified: int = 0
    made: int = 0
    recorded: int = 0
    true_positive: int = 0
    missed: int = 0
    false_reports: int = 0
    fresh_after_round: list[tuple[int, float]] = field(default_factory=list)


def page_class(n: int) -> str:
    """The page's rate class: hourly, daily, weekly or never (the sitemap's changefreq)."""
    return changefreq(rate_per_hour(n))


def at(seconds: float) -> datetime:
    return CLOCK_ZERO + timedelta(seconds=seconds)


def version_of(etag: str) -> int:
    """The version an ETag `"{n}-{v}"` names."""
    return int(etag.strip('"').rsplit("-", 1)[1])


def record(run: PolicyRun, n: int, fetched: Fetched, now: float, policy: RevisitPolicy) -> None:
    """Store a fetch's answer and tally what it found (the seed crawl's are not tallied)."""
    truth = version_at(n, now, seed=SEED)
    if fetched.version != truth:
        raise RuntimeError(
            f"page {n} served version {fetched.version} at {now} s, change_times say {truth}: "
            "is the site's seed or rate mix not the default?"
        )
    before = run.stored.get(n)
    if before is None:
        if fetched.digest is None:
            raise RuntimeError(f"page {n}: a 304 to an unconditional request")
        revisit = observe(None, changed=False, fetched_at=at(now), policy=policy)
        run.stored[n] = Stored(fetched.etag, fetched.version, fetched.digest, now, revisit)
        run.history[n] = [(now, fetched.version)]
        return
    changed = fetched.digest is not None and fetched.digest != before.digest
    made = fetched.version != before.version
    run.requests += 1
    run.requests_by_class[page_class(n)] += 1
    run.not_modified += fetched.digest is None
    run.made += made
    run.recorded += changed
    run.true_positive += made and changed
    run.missed += made and not changed
    run.false_reports += changed and not made
    before.revisit = observe(before.revisit, changed=changed, fetched_at=at(now), policy=policy)
    before.fetched_at = now
    if fetched.digest is not None:
        before.etag, before.version, before.digest = fetched.etag, fetched.version, fetched.digest
    run.history[n].append((now, before.version))


def fresh_seconds(
    history: Sequence[tuple[float, int]], changes: Sequence[float], end: float
) -> float:
    """How long within [first fetch, end) the stored copy was the page's current version."""
    total = 0.0
    for i, (fetched, version) in enumerate(history):
        following = history[i + 1][0] if i + 1 < len(history) else end
        stale_from = changes[version] if version < len(changes) else math.inf
        total += max(0.0, min(following, stale_from, end) - fetched)
    return total
