"""The gate: the one way out. Every request the product makes (a task's page, robots.txt, a
sitemap file, and whatever fetch is added later) goes through it: the address guard, robots.txt
where it applies, per-host slots and delays, redirects followed hop by hop (each hop passing
the same checks), the body cap, the User-Agent and the proxy.

Modules (trust, where a URL came from, is a param: `state.trust`):
    route: the session and guard scope a request of a given trust goes out through.
    hops: one try of a request, its redirects followed and checked here.
    fetch: `fetch`, a request with its retries (what executors and the sitemap reader call).
    task_fetch: `context.fetch`, a user executor's request, with its running task's trust.
    opening: the sessions, guard and politeness of a run, or of one-off fetches (`open_gate`).

May import: errors, redact, settings, state, tasks, retry, polite, proxies, run (the context),
crawl (`scope`: a crawl task's redirects stay in its scope), gate. Never Dagster.
"""
