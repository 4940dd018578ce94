"""Each executor asset's last materialisation of a run carries its results table's row count and
columns (`dagster/row_count`, `dagster/column_schema`), and a run logs no event more for it."""

from pathlib import Path

import dagster as dg
import duckdb

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.lib.table_metadata import COLUMN_SCHEMA, ROW_COUNT, table_metadata
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.support.partitions import range_tags
from scrapeflow_dagster_tests.support.runs import run_assets, run_resources
from scrapeflow_dagster_tests.support.tasks import store_and_add

CHAIN = ["scrape", "validation", "pages"]


def _materialisations(instance: dg.DagsterInstance, asset: str) -> list[dg.EventLogRecord]:
    return list(
        instance.fetch_materializations(dg.AssetKey(asset), limit=1000, ascending=True).records
    )


def test_the_last_materialisation_of_each_asset_holds_its_row_count_and_columns(
    tmp_path: Path,
) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    with SiteThread(pages=20, page_bytes=2000) as site, dg.DagsterInstance.ephemeral() as instance:
        rows = [(f"t-{n}", site.url(f"/page/{n}")) for n in range(5)]
        rows.append(("t-gone", site.url("/status/404")))
        keys = store_and_add(layout, instance, rows)
        resources = run_resources(layout.root, max_attempts=1, request_timeout_seconds=5.0)
        run_assets(instance, resources, CHAIN, range_tags(keys[0], keys[-1]))
        # A second run over two more tasks: the count is the table's, not the run's.
        more = store_and_add(layout, instance, [("u-1", site.url("/page/7"))])
        second = run_assets(instance, resources, CHAIN, range_tags(more[0], more[-1]))

        for asset in CHAIN:
            events = _materialisations(instance, asset)
            # One per partition that succeeded, as before: the held event is not an extra one.
            assert sorted(e.partition_key or "" for e in events) == sorted(
                [f"t-{n}" for n in range(5)] + ["u-1"]
            )
            last = events[-1].asset_materialization
            assert last is not None and last.partition == "u-1"
            assert events[-1].run_id == second.run_id
            assert last.metadata["dagster/row_count"] == dg.MetadataValue.int(6)
            schema = last.metadata["dagster/column_schema"].value
            columns = {column.name: column.type for column in schema.columns}
            assert list(columns)[:5] == ["key", "url", "ended_at", "run_id", "output_bytes"]
            # The earlier ones carry their partition's own metadata only.
            assert all(
                "dagster/row_count" not in (e.asset_materialization.metadata or {})
                for e in events[:-1]
                if e.asset_materialization is not None and e.run_id == second.run_id
            )
        pages_columns = {
            column.name: column.type
            for column in _materialisations(instance, "pages")[-1]
            .asset_materialization.metadata["dagster/column_schema"]
            .value.columns
        }
        assert pages_columns["title"] == "VARCHAR"
        assert pages_columns["link_count"] == "UBIGINT"  # as DuckDB types a JSON count
        assert pages_columns["links"] == "VARCHAR[]"
        assert pages_columns["output.url"] == "VARCHAR"  # a field named like a fixed column


def test_a_ledger_without_the_outputs_table_leaves_the_metadata_out(tmp_path: Path) -> None:
    import duckdb

    from scrapeflow_dagster.lib.table_metadata import table_metadata

    db = tmp_path / "old.duckdb"
    duckdb.connect(str(db)).close()  # a file from before `outputs`, never synced since

    assert table_metadata(db, ["scrape"], "run") == {}
    assert table_metadata(tmp_path / "none.duckdb", ["scrape"], "run") == {}


def test_a_declared_output_shape_is_the_assets_column_schema_before_any_run() -> None:
    from scrapeflow_dagster.defs.factory import executor_chain
    from scrapeflow_dagster.engine.executors.scrape import scrape
    from scrapeflow_dagster.lib.executor_assets import executor_asset
    from scrapeflow_dagster.scaleout.sharded_asset import sharded_executor_asset
    from scrapeflow_dagster_tests.engine.history.test_outputs_table import declared_count

    for make in (executor_asset, sharded_executor_asset):
        chain = executor_chain([make(scrape), make(declared_count, requires=["scrape"])])
        specs = {spec.key.to_user_string(): spec for spec in chain.specs}
        schema = specs["declared_count"].metadata["dagster/column_schema"]
        assert [(c.name, c.type) for c in schema.columns] == [
            ("key", "VARCHAR"),
            ("url", "VARCHAR"),
            ("ended_at", "TIMESTAMP"),
            ("run_id", "VARCHAR"),
            ("output_bytes", "BIGINT"),
            ("words", "BIGINT"),
            ("first", "VARCHAR"),
            ("score", "DOUBLE"),
            ("tags", "VARCHAR[]"),
        ], make
        assert "dagster/column_schema" not in specs["scrape"].metadata  # found at run time


def test_outputs_with_a_structure_per_row_keep_their_row_count_and_one_json_column(
    tmp_path: Path,
) -> None:
    # A field keyed by data (a map of response headers) gives each row a structure of its own:
    # more than the read's memory cap holds. The counts stay, the other executors' columns too.
    ledger = tmp_path / "scrapeflow.duckdb"
    with duckdb.connect(str(ledger)) as conn:
        conn.execute(
            "CREATE TABLE outputs (key VARCHAR, executor VARCHAR, run_id VARCHAR, output JSON)"
        )
        conn.execute(
            "INSERT INTO outputs SELECT 'k' || i, 'scrape', 'run-1', json_object('status', 200,"
            " 'headers', json_object('x-h-' || i, 'v')) FROM range(100000) t(i)"
        )
        conn.execute(
            "INSERT INTO outputs SELECT 'p' || i, 'pages', 'run-1', json_object('title', 't')"
            " FROM range(10) t(i)"
        )
    found = table_metadata(ledger, ["scrape", "pages"], "run-1")
    columns = {
        executor: [column.name for column in metadata[COLUMN_SCHEMA].columns]
        for executor, metadata in found.items()
    }
    fixed = ["key", "url", "ended_at", "run_id", "output_bytes"]
    assert columns == {"scrape": [*fixed, "output"], "pages": [*fixed, "title"]}
    assert found["scrape"][ROW_COUNT] == dg.MetadataValue.int(100_000)
