"""The SQL of retention (`retention`): which asset event rows a newer row of the same (asset,
partition) makes redundant, the same statement text for SQLite and Postgres.

Every Dagster read of asset events per partition takes the max-id row of a kind (partition
states, the status cache, the UI's partition detail), or asks whether a row newer than a cursor
exists; a row that a newer row of the same (asset, partition, kind) covers changes neither, so
it may go (research-42 section 2). The rules, over rows with ids up to a horizon id:

1. a MATERIALIZATION or OBSERVATION that is not the newest of its kind for its partition;
2. a PLANNED row that is not the newest planned row of its partition;
3. the newest PLANNED row when a MATERIALIZATION of the same run is newer (the UI shows
   nothing for it before or after), unless it is the asset's newest planned row (the asset's
   latest run in the UI).

A partition's newest PLANNED row newer than its newest materialisation (failed, in progress)
is kept: Dagster reads the run's status through it.
"""

from collections.abc import Sequence

MATERIALIZATION = "ASSET_MATERIALIZATION"
OBSERVATION = "ASSET_OBSERVATION"
PLANNED = "ASSET_MATERIALIZATION_PLANNED"
ASSET_KINDS = (MATERIALIZATION, OBSERVATION, PLANNED)
KINDS_SQL = ", ".join(f"'{kind}'" for kind in ASSET_KINDS)

# `{partitions}` narrows the rows to one chunk of the asset's partitions (`partitions_clause`).
_DOOMED_CTE = f"""
WITH candidates AS (
  SELECT id, partition, dagster_event_type AS kind, run_id FROM event_logs
  WHERE asset_key = :asset_key AND dagster_event_type IN ({KINDS_SQL})
    AND {{partitions}} AND id <= :horizon_id
),
latest AS (
  SELECT partition, kind, max(id) AS id FROM candidates GROUP BY partition, kind
),
doomed AS (
  SELECT c.id, c.kind FROM candidates c
    JOIN latest l ON l.partition = c.partition AND l.kind = c.kind
  WHERE c.id < l.id
  UNION
  SELECT p.id, p.kind FROM latest p
    JOIN latest m ON m.partition = p.partition AND m.kind = '{MATERIALIZATION}'
    JOIN candidates pc ON pc.id = p.id
    JOIN candidates mc ON mc.id = m.id
  WHERE p.kind = '{PLANNED}' AND p.id < m.id AND pc.run_id = mc.run_id
    AND p.id <> (
      SELECT coalesce(max(id), 0) FROM event_logs
      WHERE asset_key = :asset_key AND dagster_event_type = '{PLANNED}'
    )
)
"""

# What a prune would delete, by kind (a dry run). A pass meets a partition in every id slice
# that holds one of its events (`retention._slice_chunks`), so a row is counted only in the
# slice (`:slice_after`, `:slice_end`] that holds it: once.
COUNT_DOOMED = (
    _DOOMED_CTE
    + "SELECT kind, count(*) FROM doomed WHERE id > :slice_after AND id <= :slice_end"
    + " GROUP BY kind"
)

# SQLite: two statements in one BEGIN IMMEDIATE transaction (no DELETE inside a WITH there).
SQLITE_DELETE_TAGS = (
    "DELETE FROM asset_event_tags WHERE event_id IN (" + _DOOMED_CTE + "SELECT id FROM doomed)"
)
SQLITE_DELETE_EVENTS = (
    "DELETE FROM event_logs WHERE id IN ("
    + _DOOMED_CTE
    + "SELECT id FROM doomed) RETURNING dagster_event_type"
)

# Postgres: one statement, so that the "not the newest" test and the delete see one snapshot.
POSTGRES_DELETE = (
    _DOOMED_CTE
    + """, gone_tags AS (
  DELETE FROM asset_event_tags WHERE event_id IN (SELECT id FROM doomed)
)
DELETE FROM event_logs WHERE id IN (SELECT id FROM doomed) RETURNING dagster_event_type"""
)

# Postgres, in the transaction that stores a batch's materialisations and observations (their
# (asset, kind, partition) given as arrays): the older rows of the same (asset, kind,
# partition), which the new ones supersede (rule 1), that are at least the grace old
# themselves (`:cutoff`), with their tags; never a row of the batch itself (ids from
# `:first_id` on: its tags are written after this). A reader that lags the writes by less
# than the grace has seen them. Rows a prune is deleting are skipped (SKIP LOCKED: the writer
# never waits for a prune, so the two never deadlock).
DELETE_SUPERSEDED_AT_WRITE = f"""
WITH written AS (
  SELECT * FROM unnest(CAST(:asset_key AS text[]), CAST(:kind AS text[]),
                       CAST(:partition AS text[]))
    AS w(asset_key, kind, partition)
),
doomed AS (
  SELECT e.id FROM event_logs e
    JOIN written w ON e.asset_key = w.asset_key AND e.dagster_event_type = w.kind
                  AND e.partition = w.partition
  WHERE e.id < :first_id AND e.timestamp <= :cutoff
    AND e.dagster_event_type IN ('{MATERIALIZATION}', '{OBSERVATION}')
  FOR UPDATE OF e SKIP LOCKED
),
gone_tags AS (
  DELETE FROM asset_event_tags WHERE event_id IN (SELECT id FROM doomed)
)
DELETE FROM event_logs WHERE id IN (SELECT id FROM doomed)
"""

# The (asset, partition) pairs with asset events in an id window (the sensor's cursor).
PAIRS_IN_WINDOW = f"""
SELECT DISTINCT asset_key, partition FROM event_logs
WHERE id > :after_id AND id <= :horizon_id AND dagster_event_type IN ({KINDS_SQL})
  AND partition IS NOT NULL AND asset_key IS NOT NULL
"""

# The id of the `:offset`-th asset event past `:after_id` (up to `:horizon_id`): where a slice
# of the cursor's window ends, read along the primary key.
SLICE_END = f"""
SELECT id FROM event_logs
WHERE id > :after_id AND id <= :horizon_id AND dagster_event_type IN ({KINDS_SQL})
  AND partition IS NOT NULL AND asset_key IS NOT NULL
ORDER BY id LIMIT 1 OFFSET :offset
"""

# Whether any asset event still names the run (its FAILED state or its latest materialisation).
RUN_REFERENCED = f"""
SELECT 1 FROM event_logs WHERE run_id = :run_id AND dagster_event_type IN ({KINDS_SQL}) LIMIT 1
"""


def list_clause(partitions: Sequence[str]) -> tuple[str, dict[str, str]]:
    """The partitions of a chunk given as a list: the clause and its parameters."""
    names = [f"p{i}" for i in range(len(partitions))]
    clause = "partition IN (" + ", ".join(f":{name}" for name in names) + ")"
    return clause, dict(zip(names, partitions, strict=True))


def with_partitions(statement: str, clause: str) -> str:
    """`statement` (one of the constants above) for the chunk `clause`."""
    return statement.replace("{partitions}", clause)
