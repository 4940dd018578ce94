"""What a scraper reads on the site: deterministic pages and what it must decode or judge.

`pages` (`/page/{n}`, `/cached/{n}`, `/sitemap.txt`, and the seeded hashing and conditional
answers other routes build on), `charsets` (`/charset/{name}`: pages in legacy charsets),
`bot_checks` (`/blocked/{kind}` block pages, `/widget-captcha` pages that merely carry a widget),
`products` (`/products/`: a shop with data to extract), `scripted` (`/app/`: pages built by
JavaScript), `graphql` (`/graphql/`: a page whose script loads its content by POST) and
`changing` (`/changing/{n}`: pages that change on known schedules of a site clock, with the truth
of when and what changed).
"""
