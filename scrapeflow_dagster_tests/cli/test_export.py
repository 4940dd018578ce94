"""`scrapeflow export` through DuckDB's COPY, read back, and the pandas helpers beside it."""

from pathlib import Path

import duckdb

from scrapeflow_dagster.engine.history import read_current_state, read_pages, read_steps
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.cli.helpers import Run, run_in_process


def read_back(path: Path) -> list[tuple[str, str | None]]:
    conn = duckdb.connect()
    try:
        return conn.execute(
            "SELECT key, title FROM read_parquet(?) ORDER BY key", [str(path)]
        ).fetchall()
    finally:
        conn.close()


def test_export_pages_gives_one_row_per_parsed_page_with_its_title(
    run_command: Run, site_thread: SiteThread, tmp_path: Path, layout: DataLayout
) -> None:
    rows = [(f"e-{n}", site_thread.url(f"/page/{n}")) for n in range(4)]
    rows.append(("e-gone", site_thread.url("/status/404")))  # never parsed: no page row
    run_in_process(layout, rows)
    output = tmp_path / "pages.parquet"

    done = run_command(
        "scrapeflow", "export", "pages", "--format", "parquet", "--output", str(output)
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"exported 4 rows of pages to {output} (parquet)"
    assert read_back(output) == [(f"e-{n}", f"Page {n}") for n in range(4)]
    frame = read_pages(layout.db_path)
    assert list(frame.index) == [f"e-{n}" for n in range(4)]
    assert list(frame["title"]) == [f"Page {n}" for n in range(4)]


def test_export_steps_and_current_state_as_csv_and_jsonl_match_the_frames(
    run_command: Run, site_thread: SiteThread, tmp_path: Path, layout: DataLayout
) -> None:
    run_in_process(layout, [("x-1", site_thread.url("/page/1"))], ["scrape"])
    steps_csv, state_jsonl = tmp_path / "steps.csv", tmp_path / "state.jsonl"

    steps = run_command("scrapeflow", "export", "steps", "--output", str(steps_csv))
    state = run_command(
        "scrapeflow", "export", "current_state", "--format", "jsonl", "-o", str(state_jsonl)
    )

    assert (steps.returncode, state.returncode) == (0, 0), steps.stderr + state.stderr
    conn = duckdb.connect()
    try:
        from_csv = conn.execute("SELECT key, executor, status FROM read_csv(?)", [str(steps_csv)])
        csv_rows = from_csv.fetchall()
        from_json = conn.execute("SELECT * FROM read_json(?)", [str(state_jsonl)])
        json_columns = [c[0] for c in from_json.description]
        json_rows = from_json.fetchall()
    finally:
        conn.close()
    assert csv_rows == [("x-1", "scrape", "SUCCESS")]
    assert csv_rows == list(
        read_steps(layout.db_path)[["key", "executor", "status"]].itertuples(index=False, name=None)
    )
    frame = read_current_state(layout.db_path)
    assert json_columns == list(frame.columns) and "seq" not in json_columns
    assert len(json_rows) == len(frame) == 1


def test_export_without_duckdb_or_format_is_bad_usage(run_command: Run, tmp_path: Path) -> None:
    no_db = run_command("scrapeflow", "export", "pages", "-o", str(tmp_path / "p.parquet"))
    no_format = run_command("scrapeflow", "export", "tasks", "-o", str(tmp_path / "t.xlsx"))

    assert no_db.returncode == 2 and "no DuckDB file at" in no_db.stderr
    assert no_format.returncode == 2 and "--format" in no_format.stderr


def test_export_outputs_of_one_executor_as_parquet_with_a_column_per_field(
    run_command: Run, site_thread: SiteThread, tmp_path: Path, layout: DataLayout
) -> None:
    rows = [(f"o-{n}", site_thread.url(f"/page/{n}")) for n in range(3)]
    run_in_process(layout, rows)
    every, pages = tmp_path / "outputs.jsonl", tmp_path / "pages-outputs.parquet"

    all_done = run_command("scrapeflow", "export", "outputs", "-o", str(every))
    one_done = run_command(
        "scrapeflow", "export", "outputs", "--executor", "pages", "-o", str(pages)
    )
    misspelt = run_command(
        "scrapeflow", "export", "outputs", "--executor", "page", "-o", str(tmp_path / "x.csv")
    )
    not_outputs = run_command(
        "scrapeflow", "export", "pages", "--executor", "pages", "-o", str(tmp_path / "y.csv")
    )

    assert (all_done.returncode, one_done.returncode) == (0, 0), all_done.stderr + one_done.stderr
    assert all_done.stdout.strip() == f"exported 9 rows of outputs to {every} (jsonl)"
    assert one_done.stdout.strip() == f"exported 3 rows of outputs of pages to {pages} (parquet)"
    conn = duckdb.connect()
    try:
        executors = conn.execute(
            "SELECT executor, count(*) FROM read_json(?) GROUP BY executor ORDER BY executor",
            [str(every)],
        ).fetchall()
        parsed = conn.execute(
            "SELECT key, url, title, link_count FROM read_parquet(?) ORDER BY key", [str(pages)]
        ).fetchall()
        described = conn.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(pages)])
        types = {name: kind for name, kind, *_ in described.fetchall()}
    finally:
        conn.close()
    assert executors == [("pages", 3), ("scrape", 3), ("validation", 3)]
    frame = read_pages(layout.db_path)
    assert parsed == [
        (
            f"o-{n}",
            site_thread.url(f"/page/{n}"),
            f"Page {n}",
            int(frame.loc[f"o-{n}", "link_count"]),
        )
        for n in range(3)
    ]
    assert types["title"] == "VARCHAR" and types["links"] == "VARCHAR[]"
    assert "UBIGINT" in types["link_count"] or "INT" in types["link_count"]
    assert misspelt.returncode == 2 and "no outputs of executor 'page'" in misspelt.stderr
    assert not_outputs.returncode == 2 and "goes with `export outputs` only" in not_outputs.stderr
