"""Executors: the steps shipped with the engine, one module each. `scrape` fetches a task's
URL with retries and stores the body; `validation` rejects block pages that answered 200;
`pages` parses the stored HTML (its text and the task's selector set too: `page_text`,
`extraction`), or the DOM `render` stored for a task marked `render: true`; `extract` runs a
task's selector set as a step of its own.

May import: `engine.run.context` (what an executor gets), `engine.state`, `engine.retry`,
`engine.errors`, `engine.redact`, `engine.tasks.keys`, `engine.polite` (the address guard),
`engine.gate` (every request goes out through it), `engine.extract`, `engine.render` (the
browser, whose requests go out through the gate), `engine.content` (a page's main content).
Never Dagster.
"""
