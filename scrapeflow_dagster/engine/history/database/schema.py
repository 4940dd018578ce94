"""The DuckDB ledger's tables and views (`SCHEMA_SQL`), in one place so the schema can be read
(and later migrated) at once. The statements that fill them from the spool are in
`database.spool_sql`.
"""

SCHEMA_SQL = """
CREATE SEQUENCE IF NOT EXISTS step_runs_seq;

CREATE TABLE IF NOT EXISTS tasks (
    key VARCHAR PRIMARY KEY,
    url VARCHAR,  -- as given: what is requested
    canonical_url VARCHAR,  -- the form de-duplication compares (NULL for an invalid URL)
    method VARCHAR,
    domain VARCHAR,
    params JSON,
    added_at TIMESTAMP
);

CREATE TABLE IF NOT EXISTS step_runs (
    key VARCHAR NOT NULL,
    executor VARCHAR NOT NULL,
    status VARCHAR NOT NULL,  -- 'SUCCESS' | 'ERROR' | 'SKIPPED'
    error_class VARCHAR,
    error_kind VARCHAR,
    message VARCHAR,
    attempts INTEGER,
    http_status INTEGER,
    size BIGINT,
    md5 VARCHAR,
    proxy_host VARCHAR,
    domain VARCHAR,
    run_id VARCHAR,
    started_at TIMESTAMP,
    ended_at TIMESTAMP,
    elapsed_seconds DOUBLE,
    -- Ingest order: breaks ties between rows with the same ended_at (a rebuild row wins).
    seq BIGINT DEFAULT nextval('step_runs_seq')
);
-- Append-only: `step_current` (`current.py`) holds each pair's latest of these rows.

CREATE TABLE IF NOT EXISTS pages (
    key VARCHAR PRIMARY KEY,
    url VARCHAR,
    final_url VARCHAR,
    http_status INTEGER,
    title VARCHAR,
    text_bytes BIGINT,
    link_count INTEGER,
    content_type VARCHAR,
    charset VARCHAR,
    fetched_at TIMESTAMP,
    parsed_at TIMESTAMP,
    run_id VARCHAR
);

-- The output shape an executor declares (`declares_output`): field -> DuckDB type, in order;
-- the newest declaration a run recorded wins. Exports type its outputs by it.
CREATE TABLE IF NOT EXISTS output_columns (
    executor VARCHAR PRIMARY KEY,
    columns JSON,
    declared_at TIMESTAMP
);

-- Each parsed page's readable text (and Markdown, when `page_markdown` is set), as the latest
-- parse kept them: cut at `page_text_max_chars`, `*_chars` the length before the cut. Kept here
-- once per page (not in `outputs` or the history); a later parse without text removes it.
CREATE TABLE IF NOT EXISTS page_text (
    key VARCHAR PRIMARY KEY,
    url VARCHAR,
    text VARCHAR,
    text_chars BIGINT,
    markdown VARCHAR,
    markdown_chars BIGINT,
    parsed_at TIMESTAMP,
    run_id VARCHAR
);

-- Each parsed page's main content (`page_main_content`: menus, footers and banners left out)
-- as text and Markdown, cut as `page_text` is, and the metadata the page states (dates as it
-- states them, NULL where it does not or they are not dates). One row per page, from its latest
-- parse; a later parse without it removes it. `extracted_by`: trafilatura, page or none.
CREATE TABLE IF NOT EXISTS main_content (
    key VARCHAR PRIMARY KEY,
    url VARCHAR,
    text VARCHAR,
    text_chars BIGINT,
    markdown VARCHAR,
    markdown_chars BIGINT,
    title VARCHAR,
    author VARCHAR,
    published DATE,
    modified DATE,
    language VARCHAR,
    canonical_url VARCHAR,
    description VARCHAR,
    site_name VARCHAR,
    extracted_by VARCHAR,
    parsed_at TIMESTAMP,
    run_id VARCHAR
);

-- Every change `pages` found in a page: one row per fetch that found its page changed since
-- the fetch before (`engine.revisit`), kept for good (a later change adds a row). Text lines,
-- title, links and extracted fields that differ; `text_*` NULL when the body before was not
-- kept (`revisit_bodies_kept`), `fields` NULL when neither parse extracted any.
CREATE TABLE IF NOT EXISTS changes (
    key VARCHAR NOT NULL,
    url VARCHAR,
    host VARCHAR,
    detected_at TIMESTAMP NOT NULL,  -- the fetch that found the change
    previous_fetched_at TIMESTAMP,  -- the fetch before it, which had the old version
    title_before VARCHAR,  -- both NULL when the title did not change
    title_after VARCHAR,
    text_added VARCHAR[],
    text_removed VARCHAR[],
    text_added_count INTEGER,  -- before `text_added` was cut
    text_removed_count INTEGER,
    links_added VARCHAR[],
    links_removed VARCHAR[],
    fields JSON,  -- field -> {"before", "after"}, the fields that differ
    digest_before VARCHAR,
    digest_after VARCHAR,
    run_id VARCHAR,
    PRIMARY KEY (key, detected_at)
);

-- Each task's latest successful output per executor (the user's executors' too), as JSON with
-- credentials removed; a later failure removes it, as it does from the status file. An output
-- over the cap is NULL here with its size in `output_bytes`, and kept in the status file.
CREATE TABLE IF NOT EXISTS outputs (
    key VARCHAR NOT NULL,
    executor VARCHAR NOT NULL,
    url VARCHAR,
    output JSON,
    output_bytes BIGINT,
    ended_at TIMESTAMP,
    run_id VARCHAR,
    PRIMARY KEY (key, executor)
);

-- Each task's latest extraction per executor (a selector set's fields, `engine.extract`): the
-- fields as JSON (typed columns per set: `scrapeflow export extracted --selectors NAME`), the
-- fields that matched nothing (`missing`) and those whose text was not of their type
-- (`invalid`, field -> text). Follows `outputs`: a newer output without one, or a later
-- failure, removes the row.
CREATE TABLE IF NOT EXISTS extracted (
    key VARCHAR NOT NULL,
    executor VARCHAR NOT NULL,
    selectors VARCHAR,
    url VARCHAR,
    fields JSON,
    missing VARCHAR[],
    invalid JSON,
    ended_at TIMESTAMP,
    run_id VARCHAR,
    PRIMARY KEY (key, executor)
);

-- Every link discovery saw on a parsed page, and what it did with it (one row per parent and
-- URL; `child` is the task key the link has or would have).
CREATE TABLE IF NOT EXISTS frontier (
    crawl VARCHAR,
    parent VARCHAR NOT NULL,
    child VARCHAR,
    url VARCHAR NOT NULL,  -- as the page links it (resolved): what is requested
    canonical_url VARCHAR,  -- the form de-duplication compares
    depth INTEGER,
    -- added | known | out_of_scope | too_deep | denied | over_budget | disallowed, and for a
    -- sitemap's entries (`parent` the sitemap's URL) other_host | refused_address
    outcome VARCHAR,
    discovered_at TIMESTAMP,
    PRIMARY KEY (parent, url)
);

-- What `render: auto` learned of each URL pattern (host and path, digit segments `*`): the
-- largest counts the `render` outputs carried, which are the newest (`recording.render_choices`);
-- runs read its published copy beside the database. A file from before the table gains it at
-- the next sync.
CREATE TABLE IF NOT EXISTS render_choices (
    pattern VARCHAR PRIMARY KEY,
    judgement VARCHAR,  -- 'browser' | 'static' | 'sampling' (fewer samples than needed yet)
    pages_sampled INTEGER,  -- compared renders, samples and re-checks, over all runs
    pages_browser_needed INTEGER,  -- of those, the ones the browser made a difference to
    pages_seen BIGINT,  -- `render: auto` pages of the pattern decided, over all runs
    checked_at TIMESTAMP,  -- the last compared render
    checked_by VARCHAR,  -- its run
    updated_at TIMESTAMP,  -- the output this row is from
    run_id VARCHAR  -- its run
);

-- Files made before the canonical columns existed gain them (NULL until rows are written again).
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS canonical_url VARCHAR;
ALTER TABLE frontier ADD COLUMN IF NOT EXISTS canonical_url VARCHAR;

CREATE TABLE IF NOT EXISTS ingested_spool_files (
    name VARCHAR PRIMARY KEY,
    ingested_at TIMESTAMP
);

-- Each page's learned revisit state (`engine.revisit.rule`), from its parse's latest output.
CREATE OR REPLACE VIEW revisits AS
SELECT key, url,
    CAST(output->'revisit'->>'due_at' AS TIMESTAMP) AS due_at,
    CAST(output->'revisit'->>'interval_seconds' AS DOUBLE) AS interval_seconds,
    CAST(output->'revisit'->>'observed_at' AS TIMESTAMP) AS fetched_at,
    CAST(output->'revisit'->>'fetches' AS INTEGER) AS fetches,
    CAST(output->'revisit'->>'changes' AS INTEGER) AS changes,
    CAST(output->'revisit'->>'changed' AS BOOLEAN) AS changed,
    CAST(output->'revisit'->>'last_changed_at' AS TIMESTAMP) AS last_changed_at
FROM outputs
WHERE json_type(output->'revisit') = 'OBJECT';
"""
# `current_state` is a view of the table `step_current` (`current.py`), made after this.
