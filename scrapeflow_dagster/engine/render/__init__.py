"""Rendering: a page's document run in a browser, so that what its scripts build (text, links)
is there for `pages` and extraction. The browser is one more way out, not an exception: it
reaches nothing by itself, and every request it makes goes through the gate.

Modules:
    browser: the run's Chromium, launched unable to reach the network by itself, its
        contexts recycled every N pages.
    devtools: Chromium driven over its DevTools pipe (commands, answers, events).
    tab: one page of it: its requests held for the router, its load awaited, its DOM read.
    routing: each request the browser makes, answered through `gate.fetch` (address guard,
        robots.txt, host slots, redirects, body cap, proxy) or refused.
    document: one task's stored document rendered: its DOM once loaded and settled.
    final_url: the real URL a task's page is rendered at (its status holds it redacted).
    choice: which pages of a `render: auto` task need a browser, judged per URL pattern.
    choice_store: what earlier runs judged, read from the copy of DuckDB's `render_choices`.

May import: errors, redact, settings, state, run (the context), gate, render. Never Dagster.
"""
