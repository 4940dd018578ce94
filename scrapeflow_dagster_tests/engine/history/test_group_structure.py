"""`group_structure_sql`: DuckDB's `json_group_structure` over many rows, in bounded memory."""

import duckdb
import pytest

from scrapeflow_dagster.engine.history.reading.frames import group_structure_sql

# Fields that change type between rows, nesting, lists of mixed items, nulls, non-objects.
TRICKY_OUTPUTS = [
    '{"title": "a", "n": 1, "links": ["x", "y"], "meta": {"lang": "en"}}',
    '{"title": null, "n": 2.5, "links": [], "meta": {"lang": "fr", "dir": "ltr"}}',
    '{"title": "c", "n": "three", "links": [1, "z"], "extra": true}',
    '{"n": -4, "meta": null}',
    "{}",
    None,
    '{"title": "e", "links": [{"href": "u"}], "n": 18446744073709551615}',
]


@pytest.fixture
def conn() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    connection.execute("CREATE TABLE outputs (executor VARCHAR, output JSON)")
    return connection


@pytest.mark.parametrize("extra", [None, '"a bare string"', "[1, 2]"])
def test_the_structure_is_json_group_structure_over_every_row(
    conn: duckdb.DuckDBPyConnection, extra: str | None
) -> None:
    outputs = [*TRICKY_OUTPUTS, *([extra] if extra else [])]
    for output in outputs * 3:
        conn.execute("INSERT INTO outputs VALUES ('pages', ?), ('other', '{\"k\": 1}')", [output])
    ours = conn.execute(
        group_structure_sql("output", "FROM outputs WHERE executor = ?"), ["pages"]
    ).fetchone()
    stock = conn.execute(
        "SELECT json_group_structure(output) FROM outputs WHERE executor = ?", ["pages"]
    ).fetchone()
    assert ours == stock and ours is not None and ours[0] is not None


def test_the_structure_of_many_large_rows_fits_a_small_memory_cap(
    conn: duckdb.DuckDBPyConnection,
) -> None:
    # 100,000 pages' outputs of 40 links each: DuckDB's aggregate needs more than this cap
    # (11 GB for a million pages' outputs, measured); one row per distinct structure does not.
    conn.execute(
        "INSERT INTO outputs SELECT 'pages', json_object('title', 'page ' || i, 'links',"
        " list_transform(range(40), lambda x: 'http://h.test/page/' || (i * 40 + x)), 'n', i)"
        " FROM range(100000) t(i)"
    )
    conn.execute("SET threads = 1")
    conn.execute("SET memory_limit = '32MB'")
    found = conn.execute(
        group_structure_sql("output", "FROM outputs WHERE executor = 'pages'")
    ).fetchone()
    assert found == ('{"title":"VARCHAR","links":["VARCHAR"],"n":"UBIGINT"}',)
