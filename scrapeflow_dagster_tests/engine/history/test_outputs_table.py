"""The `outputs` table: every executor's output (the user's own included) as a row in DuckDB,
kept as the status files keep it, and read back with a typed column per field."""

import json
from pathlib import Path
from typing import Any

import pytest

from scrapeflow_dagster.engine.executor import Context, declares_output, taskify
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.history import rebuild_from_status_dir
from scrapeflow_dagster.engine.history.reading.frames import (
    OUTPUT_COLUMNS,
    executor_outputs_sql,
    read_outputs,
)
from scrapeflow_dagster.engine.history.recording.rows import OutputRow
from scrapeflow_dagster.engine.run.step import run_chain, run_step
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.schema import parse_stamp
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.engine.history.helpers import query
from scrapeflow_dagster_tests.support.tasks import add_task_file

SETTINGS = ScrapeSettings(request_timeout_seconds=5.0)
# Tasks whose key is listed in this file fail their `word_count` (a page that broke).
BROKEN = "broken.txt"


@taskify
async def word_count(context: Context, key: str, status: dict[str, Any]) -> dict[str, Any]:
    """Words on the page, as the user's executor in docs/using.md counts them."""
    broken = Path(context.dir) / BROKEN
    if broken.exists() and key in broken.read_text().split():
        raise RuntimeError(f"{key} broke")
    body = (Path(context.dir) / f"{key}.scrape").read_bytes()
    words = body.split()
    return {"words": len(words), "first": words[0].decode(), "ok": True}


def _status(layout: DataLayout, key: str) -> dict[str, Any]:
    return json.loads((layout.status_dir / f"{key}.status.json").read_text())


def _outputs(layout: DataLayout) -> dict[tuple[str, str], Any]:
    rows = query(layout.db_path, "SELECT key, executor, output FROM outputs")
    return {(key, executor): json.loads(output) for key, executor, output in rows}


async def test_each_successful_step_has_its_output_as_the_status_file_holds_it(
    site: LocalSite, tmp_path: Path
) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    keys = add_task_file(layout, [f"p{n},{site.url(f'/page/{n}')}" for n in range(4)])
    keys += add_task_file(layout, [f"gone,{site.url('/status/404')}"])

    await run_chain(layout, [scrape, word_count], keys, settings=SETTINGS)

    outputs = _outputs(layout)
    assert sorted(outputs) == sorted(
        [(f"p{n}", name) for n in range(4) for name in ("scrape", "word_count")]
    )  # the 404 failed its scrape: no output, as in its status file
    for n in range(4):
        status = _status(layout, f"p{n}")
        assert outputs[(f"p{n}", "word_count")] == status["word_count"]
        assert outputs[(f"p{n}", "word_count")]["words"] > 0
        assert outputs[(f"p{n}", "scrape")] == status["scrape"]
    url, size, ended = query(
        layout.db_path,
        "SELECT url, output_bytes, ended_at FROM outputs WHERE key = 'p2' "
        "AND executor = 'word_count'",
    )[0]
    assert url == site.url("/page/2")
    assert size == len(json.dumps(_status(layout, "p2")["word_count"], separators=(",", ":")))
    assert ended == parse_stamp(_status(layout, "p2")["word_count_last_run"])


async def test_a_later_failure_removes_the_output_and_a_rebuild_agrees(
    site: LocalSite, tmp_path: Path
) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    keys = add_task_file(layout, [f"p{n},{site.url(f'/page/{n}')}" for n in range(3)])
    await run_chain(layout, [scrape, word_count], keys, settings=SETTINGS)
    assert len(_outputs(layout)) == 6

    (layout.status_dir / BROKEN).write_text("p1\n")
    await run_step(layout, word_count, keys, requires=["scrape"], force=True)

    outputs = _outputs(layout)
    assert "word_count" not in _status(layout, "p1")  # scrapeflow drops a failed step's output
    assert ("p1", "word_count") not in outputs
    assert {("p0", "word_count"), ("p2", "word_count"), ("p1", "scrape")} <= set(outputs)
    everything = "SELECT * FROM outputs ORDER BY key, executor"
    before = query(layout.db_path, everything)

    layout.db_path.unlink()
    result = rebuild_from_status_dir(layout.status_dir, layout.db_path)

    assert not result.errors
    rebuilt = query(layout.db_path, everything)
    # Everything but the run id (the rebuild's own) comes back from the status files.
    assert [row[:-1] for row in rebuilt] == [row[:-1] for row in before]


async def test_credentials_in_an_output_stay_out_of_duckdb_and_data_stays_as_written(
    site: LocalSite, tmp_path: Path
) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    keys = add_task_file(layout, [f"c,{site.url('/set-cookie?sid=s3cr3t-value')}"])

    @taskify
    async def notes(context: Context, key: str, status: dict[str, Any]) -> dict[str, Any]:
        return {
            "source": "https://user:hunter2@example.test/feed?token=abc&page=2",
            "text": "send token=abc to the session_title field",
            "session_title": "Keynote",
            "headers": {"Authorization": "Bearer xyz", "Accept": "text/html"},
        }

    await run_chain(layout, [scrape, notes], keys, settings=SETTINGS)

    outputs = _outputs(layout)
    headers = {k.lower(): v for k, v in outputs[("c", "scrape")]["response_headers"].items()}
    assert headers["set-cookie"] == "***"
    assert headers["content-type"].startswith("application/json")
    assert not [value for value in headers.values() if "s3cr3t" in value]
    assert outputs[("c", "notes")] == {
        "source": "https://***@example.test/feed?token=***&page=2",
        "text": "send token=abc to the session_title field",  # prose, not a credential
        "session_title": "Keynote",
        "headers": {"Authorization": "***", "Accept": "text/html"},
    }


async def test_an_output_over_the_cap_is_recorded_by_its_size(
    site: LocalSite, tmp_path: Path
) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    keys = add_task_file(layout, [f"p{n},{site.url(f'/page/{n}')}" for n in range(2)])

    @taskify
    async def big(context: Context, key: str, status: dict[str, Any]) -> dict[str, Any]:
        return {"blob": "x" * (300 if key == "p1" else 10)}

    await run_chain(layout, [scrape, big], keys, settings=SETTINGS, max_output_bytes=200)

    rows = query(
        layout.db_path,
        "SELECT key, output IS NULL, output_bytes FROM outputs WHERE executor = 'big' ORDER BY key",
    )
    assert rows == [("p0", False, len('{"blob":""}') + 10), ("p1", True, len('{"blob":""}') + 300)]
    assert _status(layout, "p1")["big"] == {"blob": "x" * 300}  # the file keeps it whole


async def test_one_executors_outputs_read_back_with_a_typed_column_per_field(
    site: LocalSite, tmp_path: Path
) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    keys = add_task_file(layout, [f"p{n},{site.url(f'/page/{n}')}" for n in range(3)])
    await run_chain(layout, [scrape, word_count], keys, settings=SETTINGS)

    frame = read_outputs(layout.db_path, "word_count")

    assert list(frame.columns) == [
        "key",
        "url",
        "ended_at",
        "run_id",
        "output_bytes",
        "words",
        "first",
        "ok",
    ]
    assert list(frame["key"]) == ["p0", "p1", "p2"]
    for row in frame.itertuples():
        status = _status(layout, row.key)["word_count"]
        assert (row.words, row.first, row.ok) == (status["words"], status["first"], True)
    assert str(frame["words"].dtype).lower().startswith("uint")
    assert len(read_outputs(layout.db_path)) == 6  # every executor's, as JSON


def test_a_field_named_like_a_column_and_outputs_that_are_not_objects(tmp_path: Path) -> None:
    import duckdb

    from scrapeflow_dagster.engine.history.database import schema

    conn = duckdb.connect(str(tmp_path / "o.duckdb"))
    conn.execute(schema.SCHEMA_SQL)
    rows = [
        ("a", "mine", '{"key": "k1", "url": "u", "n": 1}'),
        ("b", "mine", '{"n": "two"}'),
        ("a", "plain", "[1, 2]"),
    ]
    conn.executemany(
        "INSERT INTO outputs (key, executor, url, output, output_bytes) VALUES (?, ?, 'x', ?, 1)",
        rows,
    )

    mine = conn.execute(executor_outputs_sql(conn, "mine"))
    names = [column[0] for column in mine.description]
    found = mine.fetchall()
    plain = conn.execute(executor_outputs_sql(conn, "plain")).fetchall()

    assert names[5:] == ["output.key", "output.url", "n"]
    assert [(row[0], row[5]) for row in found] == [("a", "k1"), ("b", None)]
    assert [json.loads(row[7]) for row in found] == [1, "two"]  # mixed types stay JSON
    assert [json.loads(row[-1]) for row in plain] == [[1, 2]]


@pytest.mark.parametrize("value", [b"bytes", {1, 2}])
def test_an_output_json_cannot_hold_is_refused_naming_it(value: object) -> None:
    from datetime import datetime

    with pytest.raises(TypeError):
        OutputRow.of("k", "mine", {"v": value}, url=None, ended_at=datetime(2026, 1, 1))


@declares_output({"words": "BIGINT", "first": "VARCHAR", "score": "DOUBLE", "tags": "VARCHAR[]"})
@taskify
async def declared_count(context: Context, key: str, status: dict[str, Any]) -> dict[str, Any]:
    """`word_count` with its output's shape declared (and a field it never returns)."""
    words = (Path(context.dir) / f"{key}.scrape").read_bytes().split()
    return {"words": len(words), "first": words[0].decode(), "extra": True}


async def test_a_declared_output_shape_types_the_export_with_exactly_its_columns(
    site: LocalSite, tmp_path: Path
) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    keys = add_task_file(layout, [f"d{n},{site.url(f'/page/{n}')}" for n in range(3)])

    await run_chain(layout, [scrape, declared_count], keys, settings=SETTINGS)

    frame = read_outputs(layout.db_path, "declared_count")
    # The declared columns in order, typed as declared; `score` and `tags` were never
    # returned (NULL), `extra` was not declared (in `output` only, not a column).
    assert list(frame.columns) == [*OUTPUT_COLUMNS, "words", "first", "score", "tags"]
    assert [str(t) for t in frame.dtypes[["words", "score"]]] == ["int64", "float64"]
    assert frame["score"].isna().all() and frame["tags"].isna().all()
    assert list(frame["first"]) == [_status(layout, k)["declared_count"]["first"] for k in keys]


def test_declaring_a_type_duckdb_does_not_have_is_refused_naming_the_field() -> None:
    with pytest.raises(ValueError, match="output field 'n': type 'INT' is not one of"):
        declares_output({"n": "INT"})
