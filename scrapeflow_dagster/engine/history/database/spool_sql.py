"""The spool as DuckDB reads it, and the statements that move it into the tables.

Every ingest statement reads from the temp table `spool`, filled from spool JSONL files by
`read_json` with the explicit `SPOOL_COLUMNS` types (no type guessing, so a batch whose first
rows lack a field still types it right). The tables they fill are in `database.schema`.
"""

# One spool line is a task (`kind` = 't') or a step run (`kind` = 's'); `seq` is its order
# within the writing Ledger, so "newer params win" holds inside one spool file.
SPOOL_COLUMNS: dict[str, str] = {
    "kind": "VARCHAR",
    "seq": "BIGINT",
    "key": "VARCHAR",
    "url": "VARCHAR",
    "canonical_url": "VARCHAR",
    "method": "VARCHAR",
    "domain": "VARCHAR",
    "params": "JSON",
    "added_at": "TIMESTAMP",
    "executor": "VARCHAR",
    "status": "VARCHAR",
    "error_class": "VARCHAR",
    "error_kind": "VARCHAR",
    "message": "VARCHAR",
    "attempts": "INTEGER",
    "http_status": "INTEGER",
    "size": "BIGINT",
    "md5": "VARCHAR",
    "proxy_host": "VARCHAR",
    "run_id": "VARCHAR",
    "started_at": "TIMESTAMP",
    "ended_at": "TIMESTAMP",
    # parsed pages (`kind` = 'p'); `ended_at` is when the page was parsed
    "final_url": "VARCHAR",
    "title": "VARCHAR",
    "text_bytes": "BIGINT",
    "link_count": "INTEGER",
    "content_type": "VARCHAR",
    "charset": "VARCHAR",
    "fetched_at": "TIMESTAMP",
    "text": "VARCHAR",
    "text_chars": "BIGINT",
    "markdown": "VARCHAR",
    "markdown_chars": "BIGINT",
    "change": "JSON",  # what changed since the fetch before, when the page changed
    # the page's main content (`page_main_content`): text, Markdown, metadata and lengths
    "main_text": "VARCHAR",
    "main_markdown": "VARCHAR",
    "main_content": "JSON",
    # step outputs (`kind` = 'o'); `ended_at` is the step's end
    "output": "JSON",
    "output_bytes": "BIGINT",
    "extracted": "JSON",  # the output's `extracted`, when it has one
    # frontier rows (`kind` = 'f'); `key` is the child, `ended_at` when it was discovered
    "crawl": "VARCHAR",
    "parent": "VARCHAR",
    "depth": "INTEGER",
    "outcome": "VARCHAR",
}


def _columns_struct(columns: dict[str, str]) -> str:
    return "{" + ", ".join(f"{name}: '{typ}'" for name, typ in columns.items()) + "}"


_COLUMNS_STRUCT = _columns_struct(SPOOL_COLUMNS)

# `?` is the list of spool file paths. `filename` orders rows across files: spool names start
# with a zero-padded nanosecond timestamp, so name order is write order.
LOAD_SPOOL_SQL = f"""
CREATE OR REPLACE TEMP TABLE spool AS
SELECT * FROM read_json(
    ?, columns = {_COLUMNS_STRUCT}, format = 'newline_delimited', filename = true
)
"""

# The same table from one file that joins several spool files, each line carrying its own
# file's path as `filename` (`sync.load_spool`): DuckDB's reader costs ~2 ms per file.
LOAD_JOINED_SPOOL_SQL = f"""
CREATE OR REPLACE TEMP TABLE spool AS
SELECT * FROM read_json(
    ?, columns = {_columns_struct({**SPOOL_COLUMNS, "filename": "VARCHAR"})},
    format = 'newline_delimited'
)
"""

STEP_COLUMNS = (
    "key, executor, status, error_class, error_kind, message, attempts, http_status, size, md5, "
    "proxy_host, domain, run_id, started_at, ended_at"
)

INSERT_STEPS_SQL = f"""
INSERT INTO step_runs ({STEP_COLUMNS}, elapsed_seconds)
SELECT {STEP_COLUMNS}, epoch(ended_at - started_at)
FROM spool
WHERE kind = 's'
ORDER BY filename, seq
"""

# Rebuild inserts a file's step only where DuckDB's current state disagrees with it. The md5 is
# compared only for a SUCCESS: an ERROR row carries no content of its own. End times may differ by
# up to a second: the runtime row times the end of the work, the file stamps its own write; a
# genuinely different run is further apart than that.
INSERT_DISAGREEING_STEPS_SQL = f"""
INSERT INTO step_runs ({STEP_COLUMNS}, elapsed_seconds)
SELECT {", ".join(f"f.{c.strip()}" for c in STEP_COLUMNS.split(","))},
       epoch(f.ended_at - f.started_at)
FROM spool AS f
LEFT JOIN current_state AS c ON c.key = f.key AND c.executor = f.executor
WHERE f.kind = 's'
  AND (
    c.key IS NULL
    OR c.status IS DISTINCT FROM f.status
    OR c.ended_at IS NULL
    OR abs(epoch(c.ended_at - f.ended_at)) > 1.0
    OR (f.status = 'SUCCESS' AND c.md5 IS DISTINCT FROM f.md5)
  )
ORDER BY f.filename, f.seq
"""

# Several rows for one key in a batch: the newest (last written) supplies url and params, the
# earliest added_at is kept, and an existing row keeps its added_at unless ours is earlier.
# (ON CONFLICT cannot update one row twice in one statement, hence the QUALIFY.)
UPSERT_TASKS_SQL = """
INSERT INTO tasks (key, url, canonical_url, method, domain, params, added_at)
SELECT key, url, canonical_url, method, domain, params, first_added_at
FROM (
    SELECT *, min(added_at) OVER (PARTITION BY key) AS first_added_at
    FROM spool
    WHERE kind = 't'
    QUALIFY row_number() OVER (PARTITION BY key ORDER BY filename DESC, seq DESC) = 1
)
ON CONFLICT (key) DO UPDATE SET
    url = excluded.url,
    canonical_url = excluded.canonical_url,
    method = excluded.method,
    domain = excluded.domain,
    params = excluded.params,
    added_at = least(tasks.added_at, excluded.added_at)
"""

# The newest parse of a page wins, in the batch and against the table.
UPSERT_PAGES_SQL = """
INSERT INTO pages
    (key, url, final_url, http_status, title, text_bytes, link_count, content_type, charset,
     fetched_at, parsed_at, run_id)
SELECT key, url, final_url, http_status, title, text_bytes, link_count, content_type, charset,
       fetched_at, ended_at, run_id
FROM spool
WHERE kind = 'p'
QUALIFY row_number() OVER (PARTITION BY key ORDER BY ended_at DESC, filename DESC, seq DESC) = 1
ON CONFLICT (key) DO UPDATE SET
    url = excluded.url,
    final_url = excluded.final_url,
    http_status = excluded.http_status,
    title = excluded.title,
    text_bytes = excluded.text_bytes,
    link_count = excluded.link_count,
    content_type = excluded.content_type,
    charset = excluded.charset,
    fetched_at = excluded.fetched_at,
    parsed_at = excluded.parsed_at,
    run_id = excluded.run_id
WHERE excluded.parsed_at >= pages.parsed_at
"""

# An executor's newest declared output shape (`kind` = 'c': `output` holds the columns).
UPSERT_OUTPUT_COLUMNS_SQL = """
INSERT INTO output_columns (executor, columns, declared_at)
SELECT executor, output, ended_at
FROM spool
WHERE kind = 'c'
QUALIFY row_number() OVER (
    PARTITION BY executor ORDER BY ended_at DESC, filename DESC, seq DESC
) = 1
ON CONFLICT (executor) DO UPDATE SET
    columns = excluded.columns,
    declared_at = excluded.declared_at
WHERE excluded.declared_at >= output_columns.declared_at
"""

# The newest parse of a page decides its text: upserted when it has some ...
_NEWEST_PARSE = """
    SELECT * FROM spool
    WHERE kind = 'p'
    QUALIFY row_number() OVER (PARTITION BY key ORDER BY ended_at DESC, filename DESC, seq DESC) = 1
"""
UPSERT_PAGE_TEXT_SQL = f"""
INSERT INTO page_text (key, url, text, text_chars, markdown, markdown_chars, parsed_at, run_id)
SELECT key, url, text, text_chars, markdown, markdown_chars, ended_at, run_id
FROM ({_NEWEST_PARSE})
WHERE text IS NOT NULL OR markdown IS NOT NULL
ON CONFLICT (key) DO UPDATE SET
    url = excluded.url,
    text = excluded.text,
    text_chars = excluded.text_chars,
    markdown = excluded.markdown,
    markdown_chars = excluded.markdown_chars,
    parsed_at = excluded.parsed_at,
    run_id = excluded.run_id
WHERE excluded.parsed_at >= page_text.parsed_at
"""

# ... and removed when it has none (text turned off, a page that became a download).
DELETE_STALE_PAGE_TEXT_SQL = f"""
DELETE FROM page_text
USING ({_NEWEST_PARSE}) AS newest
WHERE page_text.key = newest.key
  AND newest.text IS NULL AND newest.markdown IS NULL
  AND newest.ended_at > page_text.parsed_at
"""

# The same for its main content: upserted when the newest parse has one ... (its columns only:
# the window holds every column it is given, and a page's text and Markdown are large)
_NEWEST_MAIN = _NEWEST_PARSE.replace(
    "SELECT *", "SELECT key, url, main_text, main_markdown, main_content, ended_at, run_id"
)
_MAIN_COLUMNS = ("title", "author", "language", "canonical_url", "description", "site_name")
UPSERT_MAIN_CONTENT_SQL = f"""
INSERT INTO main_content
SELECT key, url, main_text, CAST(main_content->>'text_chars' AS BIGINT),
    main_markdown, CAST(main_content->>'markdown_chars' AS BIGINT),
    main_content->>'title', main_content->>'author',
    TRY_CAST(main_content->>'published' AS DATE), TRY_CAST(main_content->>'modified' AS DATE),
    {", ".join(f"main_content->>'{name}'" for name in _MAIN_COLUMNS[2:])},
    main_content->>'extracted_by', ended_at, run_id
FROM ({_NEWEST_MAIN})
WHERE main_content IS NOT NULL
ON CONFLICT (key) DO UPDATE SET
    {", ".join(f"{c} = excluded.{c}" for c in ("url", "text", "text_chars", "markdown"))},
    {", ".join(f"{c} = excluded.{c}" for c in ("markdown_chars", "published", "modified"))},
    {", ".join(f"{c} = excluded.{c}" for c in _MAIN_COLUMNS)},
    extracted_by = excluded.extracted_by, parsed_at = excluded.parsed_at, run_id = excluded.run_id
WHERE excluded.parsed_at >= main_content.parsed_at
"""

# ... and removed when it has none (the setting turned off, a page that became a download).
DELETE_STALE_MAIN_CONTENT_SQL = f"""
DELETE FROM main_content
USING ({_NEWEST_MAIN}) AS newest
WHERE main_content.key = newest.key
  AND newest.main_content IS NULL
  AND newest.ended_at > main_content.parsed_at
"""

# Each change found, once (a parse of the same fetch again finds the same change): from parsed
# pages' lines, and from `pages` outputs (a fetched file that is not a page has no page line).
INSERT_CHANGES_SQL = """
INSERT INTO changes
SELECT key, url,
    lower(regexp_extract(url, '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@]*@)?([^/?#]+)', 1)),
    CAST(change->>'detected_at' AS TIMESTAMP),
    CAST(change->>'previous_fetched_at' AS TIMESTAMP),
    change->'title'->>'before',
    change->'title'->>'after',
    CAST(change->'text_added' AS VARCHAR[]),
    CAST(change->'text_removed' AS VARCHAR[]),
    CAST(change->>'text_added_count' AS INTEGER),
    CAST(change->>'text_removed_count' AS INTEGER),
    CAST(change->'links_added' AS VARCHAR[]),
    CAST(change->'links_removed' AS VARCHAR[]),
    CASE WHEN json_type(change->'fields') = 'NULL' THEN NULL ELSE change->'fields' END,
    change->>'digest_before',
    change->>'digest_after',
    run_id
FROM (
    SELECT key, url, change, run_id, filename, seq FROM spool
    WHERE kind = 'p' AND change IS NOT NULL
    UNION ALL
    SELECT key, url, output->'change', run_id, filename, seq FROM spool
    WHERE kind = 'o' AND executor = 'pages' AND json_type(output->'change') = 'OBJECT'
) AS found
WHERE change->>'detected_at' IS NOT NULL
QUALIFY row_number() OVER (
    PARTITION BY key, change->>'detected_at' ORDER BY filename, seq
) = 1
ON CONFLICT (key, detected_at) DO NOTHING
"""

# The newest output of a task's step wins, in the batch and against the table.
UPSERT_OUTPUTS_SQL = """
INSERT INTO outputs (key, executor, url, output, output_bytes, ended_at, run_id)
SELECT key, executor, url, output, output_bytes, ended_at, run_id
FROM spool
WHERE kind = 'o'
QUALIFY row_number() OVER (
    PARTITION BY key, executor ORDER BY ended_at DESC, filename DESC, seq DESC
) = 1
ON CONFLICT (key, executor) DO UPDATE SET
    url = excluded.url,
    output = excluded.output,
    output_bytes = excluded.output_bytes,
    ended_at = excluded.ended_at,
    run_id = excluded.run_id
WHERE excluded.ended_at >= outputs.ended_at
"""

# A step that failed after its output was recorded: the status file dropped the output, and
# so does the table (run after the upsert, so a failure older than the output changes nothing).
DELETE_FAILED_OUTPUTS_SQL = """
DELETE FROM outputs
USING (
    SELECT key, executor, max(ended_at) AS failed_at
    FROM spool
    WHERE kind = 's' AND status = 'ERROR'
    GROUP BY key, executor
) AS failed
WHERE outputs.key = failed.key
  AND outputs.executor = failed.executor
  AND failed.failed_at > outputs.ended_at
"""

# The newest output of a task's step decides its extraction: upserted when it has one...
UPSERT_EXTRACTED_SQL = """
INSERT INTO extracted (key, executor, selectors, url, fields, missing, invalid, ended_at, run_id)
SELECT key, executor, extracted->>'selectors', url, extracted->'fields',
    CAST(extracted->'missing' AS VARCHAR[]), extracted->'invalid', ended_at, run_id
FROM (
    SELECT * FROM spool
    WHERE kind = 'o'
    QUALIFY row_number() OVER (
        PARTITION BY key, executor ORDER BY ended_at DESC, filename DESC, seq DESC
    ) = 1
)
WHERE extracted IS NOT NULL
ON CONFLICT (key, executor) DO UPDATE SET
    selectors = excluded.selectors,
    url = excluded.url,
    fields = excluded.fields,
    missing = excluded.missing,
    invalid = excluded.invalid,
    ended_at = excluded.ended_at,
    run_id = excluded.run_id
WHERE excluded.ended_at >= extracted.ended_at
"""

# ... and removed when it has none (the task's set was dropped, or no longer matches its URL),
# or when the step failed after it (as `outputs`).
DELETE_STALE_EXTRACTED_SQL = """
DELETE FROM extracted
USING (
    SELECT key, executor, ended_at AS since FROM spool
    WHERE kind = 'o'
    QUALIFY row_number() OVER (
        PARTITION BY key, executor ORDER BY ended_at DESC, filename DESC, seq DESC
    ) = 1 AND extracted IS NULL
    UNION ALL
    SELECT key, executor, ended_at FROM spool
    WHERE kind = 's' AND status = 'ERROR'
) AS stale
WHERE extracted.key = stale.key
  AND extracted.executor = stale.executor
  AND stale.since > extracted.ended_at
"""

# Discovery run again over the same parent (a replay, or a crawl grown in place) records the
# same links again. One row per parent and URL stays: `added` over `known` over the rest, and
# among the rest the latest (a link `too_deep` before a deeper crawl is `added` after it; one a
# page added stays `added` when it is `known` on the next pass).
_FRONTIER_RANK = "CASE {0}.outcome WHEN 'added' THEN 2 WHEN 'known' THEN 1 ELSE 0 END"
INSERT_FRONTIER_SQL = f"""
INSERT INTO frontier (crawl, parent, child, url, canonical_url, depth, outcome, discovered_at)
SELECT crawl, parent, key, url, canonical_url, depth, outcome, ended_at
FROM spool
WHERE kind = 'f'
QUALIFY row_number() OVER (
    PARTITION BY parent, url
    ORDER BY {_FRONTIER_RANK.format("spool")} DESC, filename DESC, seq DESC
) = 1
ON CONFLICT (parent, url) DO UPDATE SET
    crawl = excluded.crawl,
    child = excluded.child,
    canonical_url = excluded.canonical_url,
    depth = excluded.depth,
    outcome = excluded.outcome,
    discovered_at = excluded.discovered_at
WHERE {_FRONTIER_RANK.format("excluded")} > {_FRONTIER_RANK.format("frontier")}
    OR ({_FRONTIER_RANK.format("excluded")} = 0 AND {_FRONTIER_RANK.format("frontier")} = 0
        AND excluded.outcome <> frontier.outcome)
"""

COUNT_SPOOL_SQL = "SELECT count(*) FROM spool"

DROP_SPOOL_SQL = "DROP TABLE IF EXISTS spool"

ALREADY_INGESTED_SQL = "SELECT name FROM ingested_spool_files WHERE list_contains(?, name)"

# Parameters: the file names and the (naive UTC) ingest time; `now()` would be local time.
MARK_INGESTED_SQL = """
INSERT INTO ingested_spool_files (name, ingested_at)
SELECT unnest(?::VARCHAR[]), ?::TIMESTAMP
"""
