"""The bundled local test website: a plain aiohttp app with deterministic pages and fault routes.

`app.build_site` builds it (its docstring lists every route); `server.LocalSite` (async),
`server.SiteThread` (sync) and `server.run_site_forever` (CLI) serve it on 127.0.0.1.
The routes live by concern: `pages` (pages, links, sitemap), `faults` (stateless faults),
`mixed` (seeded faults on pages), `named_faults` (`/flaky` and `/timed`), `client_routes`
(redirects, echo, cookies, big bodies), `charsets` (pages in legacy charsets), `bot_checks`
(block pages and pages with captcha widgets), `graph` (a link graph to crawl, its private
section and robots.txt), `traffic` (requests counted by path, status and Host in flight).
"""
