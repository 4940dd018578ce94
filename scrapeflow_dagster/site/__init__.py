"""The bundled local test website: a plain aiohttp app with deterministic pages and fault routes.

`app.build_site` builds it (its docstring lists every route); `server.LocalSite` (async),
`server.SiteThread` (sync) and `server.run_site_forever` (CLI) serve it on 127.0.0.1.
The routes live by concept, one subpackage each:
    `content`: what a scraper reads: `pages` (pages, their links, `/sitemap.txt` and
        `/sitemap.xml`), `charsets` (pages in legacy charsets), `bot_checks` (block pages and
        pages with captcha widgets).
    `crawling`: what a crawler walks: `graph` (a link graph, its private section and
        robots.txt), `sitemaps` (a sitemap index), `spelled` (links spelled as real sites spell
        them), `docs` (a documentation site's shape, for benchmarks).
    `faults`: failures for a client's retries: `stateless`, `mixed` (seeded faults on pages),
        `named` (`/flaky` and `/timed`).
    `adversary`: the site against a crawler: `hostile` (redirects where a crawler must not go,
        huge bodies, endless paths), `doors` (sitemaps whose entries lead to an internal site).
    `client`: `routes` (redirects, echo, cookies, big bodies) and `traffic` (requests counted by
        path, status and Host header, and in flight).

May import aiohttp and itself, nothing else of scrapeflow's (of the package, only `cli` imports it).
"""
