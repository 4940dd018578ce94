"""State: each task's `<key>.status.json` and what guards it.

`schema` owns the status format (field names, stamps, freshness, how a success or an error is
recorded); `files` reads and writes status files (atomically, through `atomic`); `frames` turns
them into pandas frames; `params` and `trust` own the task params beyond the request (crawl
settings; the trust a learned URL inherits); `layout` says where things live under the data
folder; `locks` keeps two runs off the same task. May import: `engine.errors`,
`engine.redact`, orjson, pydantic. Never the other stages, never Dagster.
"""
