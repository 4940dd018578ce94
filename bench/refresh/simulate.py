"""One scenario of the simulated week over real HTTP: the site's clock set before each round,
the seed crawl, then each policy's hourly fetches; the figures of every policy."""

import asyncio
import time
from collections import defaultdict
from typing import Any

import aiohttp

from bench.refresh.model import (
    CLASSES,
    FILL,
    FIXED,
    GOAL_RATIO,
    HOUR,
    LEARNED,
    ORACLE,
    POLICIES,
    SEED,
    Fetched,
    PolicyRun,
    Stored,
    fresh_seconds,
    page_class,
    record,
    version_of,
)
from bench.refresh.optimum import optimum
from bench.refresh.picks import fixed_pick, learned_pick, oracle_pick
from scrapeflow_dagster.engine.executors.pages import decode_html, parse_page
from scrapeflow_dagster.engine.executors.revisits import page_digest
from scrapeflow_dagster.engine.revisit.digest import DEFAULT_NOISE
from scrapeflow_dagster.engine.revisit.plan import change_rate, host_of
from scrapeflow_dagster.engine.revisit.rule import DAY, RevisitPolicy
from scrapeflow_dagster.site.content.changing import change_times, rate_per_hour, version_at

CONNECTIONS = 32


async def fetch(
    session: aiohttp.ClientSession, base: str, n: int, stored: Stored | None
) -> Fetched:
    """GET page n, conditionally on the stored copy's ETag; a 200's change digest."""
    url = f"{base}/changing/{n}"
    headers = {"If-None-Match": stored.etag} if stored is not None else {}
    async with session.get(url, headers=headers) as response:
        etag = response.headers["ETag"]
        if response.status == 304:
            return Fetched(etag, version_of(etag), None)
        response.raise_for_status()
        body = await response.read()
        content_type = response.headers.get("Content-Type")
    page = parse_page(decode_html(body, content_type=content_type), url)
    digest = page_digest(page.tree, page.output["title"], DEFAULT_NOISE)
    return Fetched(etag, version_of(etag), digest)


async def set_clock(session: aiohttp.ClientSession, base: str, seconds: float) -> None:
    async with session.post(f"{base}/control/changing/clock", params={"t": str(seconds)}) as r:
        r.raise_for_status()


async def simulate(base: str, pages: int, budget: int, days: float) -> dict[str, Any]:
    """One scenario: the seed crawl, then hourly rounds for `days`; the figures."""
    hours = round(days * 24)
    end = hours * HOUR
    age_hours = pages / budget
    policy = RevisitPolicy(min_seconds=HOUR, initial_seconds=age_hours * HOUR, max_seconds=30 * DAY)
    host = host_of(base)
    runs = {name: PolicyRun(name) for name in POLICIES}
    started = time.perf_counter()
    connector = aiohttp.TCPConnector(limit=CONNECTIONS)
    async with aiohttp.ClientSession(connector=connector) as session:
        async with session.post(f"{base}/control/reset") as answer:  # the clock back to 0
            answer.raise_for_status()

        async def fetch_all(picks: dict[str, list[int]], now: float) -> None:
            jobs = [(name, n) for name, chosen in picks.items() for n in chosen]
            answers = await asyncio.gather(
                *(fetch(session, base, n, runs[name].stored.get(n)) for name, n in jobs)
            )
            for (name, n), fetched in zip(jobs, answers, strict=True):
                record(runs[name], n, fetched, now, policy)

        await fetch_all({name: list(range(pages)) for name in POLICIES}, 0.0)  # the seed crawl
        for hour in range(1, hours):
            now = hour * HOUR
            await set_clock(session, base, now)
            fixed = fixed_pick(runs[FIXED], now, age_hours * HOUR, budget)
            spent_fixed = runs[FIXED].requests + len(fixed)
            picks = {
                FIXED: fixed,
                LEARNED: learned_pick(runs[LEARNED], now, budget, host, age_hours * HOUR),
                FILL: learned_pick(
                    runs[FILL],
                    now,
                    budget,
                    host,
                    age_hours * HOUR,
                    fill=spent_fixed - runs[FILL].requests,
                ),
                ORACLE: oracle_pick(
                    runs[ORACLE],
                    now,
                    budget,
                    host,
                    age_hours * HOUR,
                    fill=spent_fixed - runs[ORACLE].requests,
                ),
            }
            await fetch_all(picks, now)
            current = [version_at(n, now, seed=SEED) for n in range(pages)]
            for run in runs.values():
                up_to_date = sum(run.stored[n].version == current[n] for n in range(pages))
                run.fresh_after_round.append((hour, up_to_date / pages))
        await set_clock(session, base, end)
        async with session.get(f"{base}/control/changing") as answer:
            truth = (await answer.json())["pages"]
    seconds = time.perf_counter() - started

    changes = {n: change_times(n, end, seed=SEED) for n in range(pages)}
    site_events = sum(len(truth[str(n)]["changes"]) for n in range(pages))
    site_requests = sum(int(truth[str(n)]["requests"]) for n in range(pages))
    ours_requests = sum(r.requests for r in runs.values()) + len(POLICIES) * pages
    by_class: dict[str, list[int]] = defaultdict(list)
    for n in range(pages):
        by_class[page_class(n)].append(n)
    policies: dict[str, Any] = {}
    for name, run in runs.items():
        fresh = {n: fresh_seconds(run.history[n], changes[n], end) / end for n in range(pages)}
        classes = {}
        for cls in CLASSES:
            members = by_class.get(cls, [])
            revisits = [run.stored[n].revisit for n in members]
            classes[cls] = {
                "pages": len(members),
                "freshness": sum(fresh[n] for n in members) / len(members) if members else None,
                "requests": run.requests_by_class[cls],
                "mean_interval_hours": (
                    sum(r.interval_seconds for r in revisits) / len(revisits) / HOUR
                    if revisits
                    else None
                ),
                "mean_estimated_rate_per_hour": (
                    sum(change_rate(r) for r in revisits) / len(revisits) * HOUR
                    if revisits
                    else None
                ),
            }
        policies[name] = {
            "requests": run.requests,
            "not_modified": run.not_modified,
            "freshness": sum(fresh.values()) / pages,
            "changes_made": run.made,
            "changes_recorded": run.recorded,
            "true_positives": run.true_positive,
            "missed": run.missed,
            "false_reports": run.false_reports,
            "classes": classes,
            "fresh_after_round": run.fresh_after_round,
        }
    fixed_freshness = policies[FIXED]["freshness"]
    for figures in policies.values():
        figures["ratio_to_fixed"] = (
            figures["freshness"] / fixed_freshness if fixed_freshness else None
        )
    return {
        "pages": pages,
        "budget": budget,
        "fixed_age_hours": age_hours,
        "days": days,
        "rounds": hours - 1,
        "seconds": seconds,
        "site_change_events": site_events,
        "change_times_events": sum(len(c) for c in changes.values()),
        "site_requests": site_requests,
        "our_requests": ours_requests,
        "ratio_ceiling": 1 / fixed_freshness if fixed_freshness else None,
        "optimum": optimum([rate_per_hour(n) for n in range(pages)], budget),
        "policies": policies,
        "goal_ok": max(policies[LEARNED]["ratio_to_fixed"], policies[FILL]["ratio_to_fixed"])
        >= GOAL_RATIO,
        "all_recorded": all(p["missed"] == 0 for p in policies.values()),
        "no_false_reports": all(p["false_reports"] == 0 for p in policies.values()),
    }
