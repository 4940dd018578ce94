"""Crawling: links that parsed pages reveal become new tasks within a depth and a scope, recorded
in the frontier (deduplicated by request fingerprint, resumable after any stop).

Modules:
    scope: what happens to one link (scope host/domain, allow/deny, depth; the outcome names).
    journal: the frontier's folder `<data>/frontier/` (what each file holds), its files' names,
        their whole lines read and appended.
    generation: whose the frontier's files are (the status folder's identity); the files of a
        status folder made anew are retired, and read as empty until they are.
    batches: the frontier lock, and the batch files of discoveries a driver finishes.
    expanded_and_added: the parents whose links were taken in, the tasks added per crawl (its
        budget count), and `JournalTail`, which reads either as it grows.
    lastmods: the `lastmod` a sitemap gave each page (`scrapeflow refresh` reads it).
    stream_summaries: what each step of a crawl's streamed run took in, for its driver.
    discover: `discover`, the one function the sensor and `scrapeflow crawl` call.
    parents: the parsed pages a discovery takes the links of, read from their status files.
    planning: one discovery's batch planned: each link judged into a frontier row or a task.
    applying: a planned batch applied: tasks stored, rows recorded, parents marked.
    discovery_memo: what successive discoveries reuse (`DiscoveryMemo`, `known_fingerprints`).
    cached_robots: robots.txt at discovery, as the runs cached it (never fetched).
    regrow: a seed given new crawl settings hands them to its crawl and reopens its pages.
    seeds: a crawl's seeds from task files and sitemaps, stored (growing crawls in place).
    sitemaps: reading sitemaps (index files, gzip, robots.txt `Sitemap:` lines), through the
        gate, with the sitemaps.org host rule.

May import: errors, redact, settings, state, tasks, history, proxies (the provider type), polite
(the robots.txt cache, read only; the guard's resolver), run (the context a gate opens), gate
(every sitemap file is fetched through it), crawl.
"""

from scrapeflow_dagster.engine.crawl.batches import (
    FrontierBatch,
    finish_batch,
    pending_batches,
)
from scrapeflow_dagster.engine.crawl.discover import Discovery, discover
from scrapeflow_dagster.engine.crawl.discovery_memo import DiscoveryMemo, known_fingerprints

__all__ = [
    "Discovery",
    "DiscoveryMemo",
    "FrontierBatch",
    "discover",
    "finish_batch",
    "known_fingerprints",
    "pending_batches",
]
