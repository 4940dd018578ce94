"""The site as a crawler's adversary: routes that try to lead it where it must not go.

`hostile` (`/hostile/`: redirects into disallowed paths, other hosts, `file:` and internal
addresses, loops, huge and bomb bodies, an endless path) and `doors` (`/doors/`: sitemaps and a
robots.txt whose entries point at internal addresses in every spelling, when the site is built
with `internal_base`).
"""
