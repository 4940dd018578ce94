"""One discovery: the links of parsed pages judged and the new ones stored as tasks, under the
frontier lock, each step replayable after a kill.

Modules:
    discover: `discover`, the one function the sensor and `scrapeflow crawl` call.
    parents: the parsed pages a discovery takes the links of, read from their status files.
    planning: one discovery's batch planned: each link judged into a frontier row or a task.
    applying: a planned batch applied: tasks stored, rows recorded, parents marked.
    discovery_memo: what successive discoveries reuse (`DiscoveryMemo`, `known_fingerprints`).
    cached_robots: robots.txt at discovery, as the runs cached it (never fetched).

May import: `crawl.scope`, `crawl.frontier`, errors, settings, state, tasks (keys, adding),
history (the Ledger and its rows), polite (the robots.txt cache, read only).
"""
