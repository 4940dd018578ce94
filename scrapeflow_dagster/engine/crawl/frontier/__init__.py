"""The frontier on disk: the crawl's own files in `<data>/frontier/`, written so that a kill at
any moment loses nothing and a replay duplicates nothing.

    .lock              held (flock) while discovery runs: one discovery at a time per data dir
    expanded.txt       keys whose links were taken in (appended; a torn last line is cut off;
                       `-<TAB>key` takes a key out again, for a crawl that grows in place)
    added.tsv          `crawl<TAB>key` of every task discovery added (a crawl's budget count)
    lastmod.tsv        `key<TAB>lastmod` (ISO, UTC) of each page a sitemap dates, then
                       `<TAB>changefreq` when given (appended; the last line of a key wins):
                       `scrapeflow refresh` reads it
    hand-keys.tsv      `key<TAB>fingerprint` of tasks whose key was given by hand (a cache:
                       stored params never change, so each is read from its status file once)
    batches/ID.json    one discovery: its new tasks and frontier rows, written before they are
                       stored (`applied` false: replayed by the next discovery), then kept until
                       the driver that runs them calls `finish_batch` (a run that takes
                       them into its own pass, `streamed_by`, finishes them as it ends)
    streamed/TOKEN/    what each step of a crawl's streamed run took in, for the crawl's
                       driver to report (`take_stream_summaries` removes them)
    generation         the identity of the status folder these files belong to
    retired/STAMP-ID/  the files above of a status folder that is gone

Each file has one module here that reads and writes it:

    journal             the folder, its files' names, their whole lines read and appended
    generation          `generation` and `retired/`: whose files these are (the files of a
                        status folder made anew are retired, and read as empty until they are)
    batches             `.lock` (`frontier_lock`) and `batches/`
    expanded_and_added  `expanded.txt` and `added.tsv`, and `JournalTail` that reads them as
                        they grow
    lastmods            `lastmod.tsv`
    hand_keys           `hand-keys.tsv`
    stream_summaries    `streamed/`

The frontier's rows in DuckDB (every link judged, with its outcome) are `engine.history`'s.

May import: `engine.state` (the data folder's layout, atomic writes), orjson. Nothing else of
`crawl`: discovery, seeding and the drivers stand on it.
"""
