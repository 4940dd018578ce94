"""Open-ledger markers: where DuckDB may lag behind the status files, and since when.

A runner writes a task's status file first and records its step row in a `Ledger` after; the
row reaches the spool only when the ledger's buffer is flushed. So each open Ledger keeps one
small marker file, `<spool_dir>/.open/<pid>-<uuid>.json`, from its creation until it is closed
with nothing buffered, holding `since`: a wall-clock time (Unix seconds) no later than the
write of any status file whose row it may still hold unspooled. A status file last written
before the oldest marker's `since` therefore has its step rows in the spool or in DuckDB.

`since` is the start of the batch *before* the one being buffered: a runner records a step
row a moment after writing its status file, and a flush may fall in that moment, so the
current batch may hold a row whose file was written in the previous batch's time.

A marker whose process is gone (same host, pid not running or running another program) was
left by a killed run: its buffered rows are lost, and `scrapeflow status` repairs them from the
status files changed since its `since` (`counting.status_counts`), then removes it. Markers of other
hosts (a shared data folder) cannot be checked and are taken as live.

Finding the files changed since a time takes a `stat` of every status file: 2 s of the 4.8 s
`scrapeflow status` took at a million tasks with a run going on. So a run's Ledger also keeps
a **journal** (`Ledger(journal=True)`): before the runner writes a status file it names the
key there (`announce`: one `write` to a file opened for appending, 2 us against ~0.1 ms for
the status file's own atomic write, measured 2026-11-30). The marker lists its journal files,
one per batch: the current one and the one before (the same batch `since` goes back to); a
flush starts a new one and removes the oldest, whose keys' rows are spooled by then. A live
journaled marker thus names every status file its rows may lag behind, and `scrapeflow status`
reads those, stat'ing no other file. A dead one (its last lines may not have reached the
disk in a power loss), one without a journal (an older version, a Ledger made without) or an
unreadable one is taken by its time, as before. A journal file gone when read was the oldest,
removed after its rows were spooled: the reader's sync, after it, takes them.

Modules:
    names: the marker folder (`.open/`), its files' suffixes, what identifies a process.
    ledger_marker: `LedgerMarker`, the marker and journal one Ledger writes.
    open_markers: `OpenMarker` and `read_markers` (what `scrapeflow status` reads), and a dead
        marker removed or moved up.

May import: `engine.state` (atomic writes, whether a process runs), orjson. Nothing else of
`history`: the Ledger (`recording`) writes markers and `counting` reads them.
"""
