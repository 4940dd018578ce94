"""Crawling: links that parsed pages reveal become new tasks within a depth and a scope, recorded
in the frontier (deduplicated by request fingerprint, resumable after any stop).

Subpackages, each `__init__` saying what it holds and may import (bottom first: each imports
only `scope` and those above it in this list):
    frontier: the frontier's files in `<data>/frontier/` (the package's docstring is their
        format): `journal`, `generation`, `batches`, `expanded_and_added`, `lastmods`,
        `hand_keys`, `stream_summaries`.
    sitemaps: reading sitemaps through the gate (`reading`, `cache`, `robots`, `urls`).
    discovery: one discovery (`discover`, `parents`, `planning`, `applying`, `discovery_memo`,
        `cached_robots`).
    seeding: a crawl's seeds stored (`seeds`), crawls grown in place (`regrow`).
And one module:
    scope: what happens to one link (scope host/domain, allow/deny, depth; the outcome names).

May import: errors, redact, settings, state, tasks, history, proxies (the provider type), polite
(the robots.txt cache, read only; the guard's resolver), run (the context a gate opens), gate
(every sitemap file is fetched through it), crawl.
"""

from scrapeflow_dagster.engine.crawl.discovery.discover import Discovery, discover
from scrapeflow_dagster.engine.crawl.discovery.discovery_memo import (
    DiscoveryMemo,
    known_fingerprints,
)
from scrapeflow_dagster.engine.crawl.frontier.batches import (
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
