"""The bundled local test website: a plain aiohttp app with deterministic pages and fault routes.

`app.build_site` builds it; `server.LocalSite` (async), `server.SiteThread` (sync) and
`server.run_site_forever` (CLI) serve it on 127.0.0.1.
"""
