"""What a crawler walks on the site: links to follow, robots.txt to obey, sitemaps to read.

`graph` (`/graph/{n}`, a link tree in every link spelling, its disallowed `/graph/private/`
section and `/robots.txt`), `sitemaps` (`/sitemaps/`: an index, a plain and a gzipped sitemap),
`spelled` (`/spelled/`: links spelled as real sites spell them) and `docs` (`/docs/{n}`: a
documentation site's shape, for benchmarks).
"""
