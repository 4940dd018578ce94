"""Sitemaps read as seeds: `sitemap.xml` files (index files followed, gzip read) and the
`Sitemap:` lines of robots.txt, every file fetched through the gate, with the sitemaps.org
host rule.

Modules:
    reading: `read_sitemaps` and `SitemapReading`, the entries a seed's sitemaps list.
    cache: sitemap files kept as the runs' robots.txt copies are (asked again conditionally).
    robots: robots.txt as the sitemap reader asks it (the `Sitemap:` lines of each origin).
    urls: which URLs may be fetched at all, and which site one is on.

May import: `crawl.scope` (the outcome names), errors, redact, state, tasks (request URLs),
polite (origins, the address guard's resolver), run (the context a gate opens), gate (every
sitemap file is fetched through it), aiohttp, yarl, orjson, ultimate-sitemap-parser (`usp`).
"""
