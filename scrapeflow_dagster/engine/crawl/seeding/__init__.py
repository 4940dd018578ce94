"""A crawl's seeds stored, and crawls grown in place: what `scrapeflow crawl` does before its
rounds.

Modules:
    seeds: seeds from task files and sitemaps, stored with the crawl's settings, and the
        sitemaps' `lastmod` kept for refresh decisions.
    regrow: a seed given new crawl settings hands them to its crawl and reopens its pages.

May import: `crawl.frontier`, `crawl.sitemaps`, errors, redact, settings, state, tasks,
history (the Ledger and its rows), proxies (the provider type), gate (`open_gate`).
"""
