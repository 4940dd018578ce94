"""Politeness: robots.txt (fetched once per host, cached with its age), per-host concurrency and
delays that hold inside a run and across runs sharing a data dir on one machine.

`robots` (fetch, parse with protego, cache in `<status dir>/.polite/robots/`), `hosts` (slots
and delays per host:port, shared through `<status dir>/.polite/hosts/`), `addresses` (the address
guard), `sockets` (a guarded session's connections checked as they open), `gate` (`Politeness`:
what a run checks before a request and holds around it).

May import: errors, redact, settings, state, tasks (`urls`: robots.txt redirects resolved as a
browser resolves them), polite. Used by `gate`, `run` and `executors`.
"""
