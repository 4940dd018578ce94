"""Crawling: links that parsed pages reveal become new tasks within a depth and a scope, recorded
in the frontier (deduplicated by request fingerprint, resumable after any stop).

May import: errors, settings, state, tasks, history, crawl.
"""
