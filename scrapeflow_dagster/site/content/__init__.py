"""What a scraper reads on the site: deterministic pages and what it must decode or judge.

`pages` (`/page/{n}`, `/cached/{n}`, `/sitemap.txt`, and the seeded hashing and conditional
answers other routes build on), `charsets` (`/charset/{name}`: pages in legacy charsets) and
`bot_checks` (`/blocked/{kind}` block pages, `/widget-captcha` pages that merely carry a widget).
"""
