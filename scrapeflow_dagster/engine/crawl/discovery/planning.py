"""The planning of one discovery's batch: each link of the parents judged (scope, dedupe,
robots.txt, budget) into a frontier row, and the links added into new tasks."""

import dataclasses
from datetime import datetime

from scrapeflow_dagster.engine.crawl.discovery.cached_robots import CachedRobots
from scrapeflow_dagster.engine.crawl.discovery.discovery_memo import DiscoveryMemo
from scrapeflow_dagster.engine.crawl.discovery.parents import Parent
from scrapeflow_dagster.engine.crawl.frontier.batches import FrontierBatch, new_batch_id
from scrapeflow_dagster.engine.crawl.scope import (
    ADDED,
    DISALLOWED,
    OUT_OF_SCOPE,
    OVER_BUDGET,
    Rules,
    identify,
)
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.trust import FROM_LINK, learned
from scrapeflow_dagster.engine.tasks.keys import SHORT_FINGERPRINT


def plan_batch(
    layout: DataLayout,
    parents: list[Parent],
    now: datetime,
    robots: CachedRobots,
    memo: DiscoveryMemo,
) -> FrontierBatch:
    """The batch of one discovery over `parents` (not written yet): a frontier row for each
    link, judged in order (scope, known tasks, cached robots.txt, the crawl's budget), and a
    new task for each link added."""
    known = memo.known  # stored tasks: a planned one is known once it is stored, not before
    planned: set[str] = set()  # this batch's (a copy of `known` cost O(tasks) per discovery)
    sizes = memo.crawl_sizes(layout)
    batch = FrontierBatch(id=new_batch_id(), parents=[p.key for p in parents])
    stamp = now.isoformat()
    # Pages of a site repeat links (menus, footers): each is canonicalised and hashed once.
    identities = memo.identities
    rows = batch.rows
    for parent in parents:
        rules = Rules.of(parent.settings)
        crawl = parent.crawl
        child_depth = parent.settings.depth + 1
        budget = parent.settings.max_pages
        inherited = {
            **dataclasses.replace(
                parent.settings, depth=child_depth, parent=parent.key, crawl=crawl
            ).as_params(),
            **learned(parent.trust, FROM_LINK),
        }
        # What every row of this parent's links shares.
        common = {
            "crawl": crawl,
            "parent": parent.key,
            "depth": child_depth,
            "discovered_at": stamp,
        }
        for raw in parent.links:
            try:
                link = identities[raw]
            except KeyError:
                link = identities[raw] = identify(raw)
            except TypeError:  # not hashable: not a URL either
                link = None
            if link is None:
                rows.append({**common, "url": str(raw), "child": None, "outcome": OUT_OF_SCOPE})
                continue
            short = link.fingerprint[:SHORT_FINGERPRINT]
            outcome = rules.judge(
                link,
                seed_host=parent.seed_host,
                child_depth=child_depth,
                known=short in known or short in planned,
            )
            if outcome is None and robots.disallows(link):
                outcome = DISALLOWED  # before the budget: it never takes a place there
            # The seed is a task of its crawl too.
            if outcome is None and budget is not None and 1 + sizes.get(crawl, 0) >= budget:
                outcome = OVER_BUDGET
            # Stored and requested as the page links it; the canonical form only dedupes.
            rows.append(
                {
                    **common,
                    "url": link.url,
                    "canonical": link.canonical,
                    "child": link.key,
                    "outcome": outcome or ADDED,
                }
            )
            if outcome is not None:
                continue
            planned.add(short)
            sizes[crawl] = sizes.get(crawl, 0) + 1
            batch.children.append({"key": link.key, "params": {"url": link.url, **inherited}})
    batch.crawls = sorted({p.crawl for p in parents})
    return batch
