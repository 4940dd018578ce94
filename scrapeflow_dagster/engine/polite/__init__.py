"""Politeness: robots.txt (fetched once per host, cached with its age), per-host concurrency and
delays that hold inside a run and across runs sharing a data dir on one machine.

May import: errors, settings, state, polite. Used by `run` and `executors`.
"""
