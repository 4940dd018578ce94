"""Crawling: links that parsed pages reveal become new tasks within a depth and a scope, recorded
in the frontier (deduplicated by request fingerprint, resumable after any stop).

Modules:
    scope: what happens to one link (scope host/domain, allow/deny, depth; the outcome names).
    journal: the frontier's files in `<data>/frontier/` (lock, expanded parents, crawl sizes,
        batches a driver finishes).
    discover: `discover`, the one function the sensor and `scrapeflow crawl` call.
    regrow: a seed given new crawl settings hands them to its crawl and reopens its pages.
    seeds: a crawl's seeds from task files and sitemaps, stored (growing crawls in place).
    sitemaps: reading sitemaps (index files, gzip, robots.txt `Sitemap:` lines).

May import: errors, settings, state, tasks, history, polite (the robots.txt cache, read only),
crawl.
"""

from scrapeflow_dagster.engine.crawl.discover import (
    Discovery,
    DiscoveryMemo,
    discover,
    known_fingerprints,
)
from scrapeflow_dagster.engine.crawl.journal import (
    FrontierBatch,
    finish_batch,
    pending_batches,
)

__all__ = [
    "Discovery",
    "DiscoveryMemo",
    "FrontierBatch",
    "discover",
    "finish_batch",
    "known_fingerprints",
    "pending_batches",
]
