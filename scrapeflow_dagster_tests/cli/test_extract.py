"""Extraction without code, as a user does it: a selector file given to `scrapeflow tasks add
--extract`, the chain materialised by the real `dagster asset materialize`, the fields read
back from DuckDB and from a Parquet export, exactly as the bundled shop's pages show them."""

import json
import subprocess
from pathlib import Path

import duckdb

from scrapeflow_dagster.engine.history import read_extracted, read_steps
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.content.products import product
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.cli.helpers import Run, write_csv
from scrapeflow_dagster_tests.support.paths import BIN_DIR
from scrapeflow_dagster_tests.support.processes import kill_group, process_env, wait_until

SELECTORS = """\
urls: "/products/\\\\d+$"
fields:
  name: "h1::text"
  price: {css: "span.price", type: number, required: true}
  sku: {xpath: "//*[@itemprop='sku']/text()"}
  tags: {css: ".tags li", all: true}
  image: {css: "img.main", attr: src, type: url}
  stars: {css: ".rating::attr(data-stars)", type: integer}
  discount: {css: ".discount"}
"""
PRODUCTS = range(14)  # 6 and 13 are sold out: no price


def expected_fields(site: SiteThread, n: int) -> dict[str, object]:
    item = product(n)
    return {
        "name": item.name,
        "price": item.price,
        "sku": item.sku,
        "tags": item.tags,
        "image": site.url(item.image),
        "stars": item.stars,
        "discount": None,
    }


def test_a_selector_file_gives_typed_rows_in_duckdb_and_parquet_through_dagster(
    run_command: Run, site_thread: SiteThread, tmp_path: Path, layout: DataLayout
) -> None:
    selectors = tmp_path / "products.yaml"
    selectors.write_text(SELECTORS)
    rows = [(f"p-{n:02d}", site_thread.url(f"/products/{n}")) for n in PRODUCTS]
    rows.append(("p-list", site_thread.url("/products/list/0")))  # outside the set's urls
    tasks = write_csv(tmp_path / "tasks.csv", rows)

    added = run_command("scrapeflow", "tasks", "add", str(tasks), "--extract", str(selectors))
    assert added.returncode == 0, added.stderr
    assert "selector set 'products' stored" in added.stderr
    done = run_command(
        "dagster", "asset", "materialize", "-m", "scrapeflow_dagster.definitions",
        "--select", "scrape,validation,pages", "--partition-range", "p-00...p-list",
    )  # fmt: skip

    # The sold-out pages fail `pages`: their required price matched nothing.
    assert done.returncode != 0
    assert "2 of 15 tasks failed" in done.stdout + done.stderr
    parquet = tmp_path / "products.parquet"
    exported = run_command(
        "scrapeflow", "export", "extracted", "--selectors", "products", "-o", str(parquet)
    )
    assert exported.returncode == 0, exported.stderr
    in_stock = [n for n in PRODUCTS if product(n).price is not None]
    assert exported.stdout.strip() == (
        f"exported {len(in_stock)} rows of extracted of products to {parquet} (parquet)"
    )
    conn = duckdb.connect()
    try:
        table = conn.execute("SELECT * FROM read_parquet(?) ORDER BY key", [str(parquet)])
        columns = [c[0] for c in table.description]
        got = [dict(zip(columns, row, strict=True)) for row in table.fetchall()]
        types = dict(
            conn.execute(
                "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet(?))",
                [str(parquet)],
            ).fetchall()
        )
    finally:
        conn.close()
    assert [row["key"] for row in got] == [f"p-{n:02d}" for n in in_stock]
    fields = ["name", "price", "sku", "tags", "image", "stars", "discount"]
    assert [{f: row[f] for f in fields} for row in got] == [
        expected_fields(site_thread, n) for n in in_stock
    ]
    # Fields that matched nothing are said per row (a product without tags has none).
    assert [row["missing"] for row in got] == [
        [*(["tags"] if not product(n).tags else []), "discount"] for n in in_stock
    ]
    assert {f: types[f] for f in ("price", "stars", "tags", "name")} == {
        "price": "DOUBLE",
        "stars": "BIGINT",
        "tags": "VARCHAR[]",
        "name": "VARCHAR",
    }
    # The same rows in DuckDB, and the failures said per task in `step_runs`.
    frame = read_extracted(layout.db_path)
    assert sorted(frame["key"]) == [f"p-{n:02d}" for n in in_stock]
    assert set(frame["executor"]) == {"pages"}
    steps = read_steps(layout.db_path)
    failed = steps[(steps["executor"] == "pages") & (steps["status"] == "ERROR")]
    assert sorted(failed["key"]) == ["p-06", "p-13"]
    assert set(failed["error_class"]) == {"ExtractionError"}
    assert all("required field(s) price matched nothing" in m for m in failed["message"])
    # The list page was parsed, not extracted.
    assert "p-list" not in set(frame["key"])


def test_a_bad_selector_file_is_refused_naming_the_file_and_field(
    run_command: Run, site_thread: SiteThread, tmp_path: Path, layout: DataLayout
) -> None:
    selectors = tmp_path / "broken.yaml"
    selectors.write_text('fields:\n  price: {css: "span.price[", type: number}\n')
    tasks = write_csv(tmp_path / "tasks.csv", [("b-1", site_thread.url("/products/1"))])

    added = run_command("scrapeflow", "tasks", "add", str(tasks), "--extract", str(selectors))

    assert added.returncode == 2
    assert f"{selectors}: field 'price': css 'span.price[' does not compile" in added.stderr
    assert not (layout.status_dir / "b-1.status.json").exists()


def test_a_crawl_hands_its_selector_set_to_the_pages_it_discovers(
    run_command: Run, site_thread: SiteThread, tmp_path: Path, layout: DataLayout
) -> None:
    selectors = tmp_path / "shop.yaml"
    selectors.write_text(
        "urls: '/products/\\d+$'\nfields:\n  sku: '[itemprop=sku]'\n"
        "  price: {css: 'span.price', type: number}\n"
    )
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(site_thread.url("/products/list/0") + "\n")

    crawled = run_command(
        "scrapeflow", "crawl", str(seeds), "--max-depth", "1", "--extract", str(selectors)
    )

    assert crawled.returncode == 0, crawled.stdout[-2000:] + crawled.stderr[-2000:]
    rows = read_extracted(layout.db_path, "shop", {"sku": "VARCHAR", "price": "DOUBLE"})
    # The list's 20 products, each with the seed's set; the list pages are not extracted.
    assert sorted(rows["url"]) == sorted(site_thread.url(f"/products/{n}") for n in range(20))
    by_url = dict(zip(rows["url"], zip(rows["sku"], rows["price"], strict=True), strict=True))
    for n in range(20):
        sku, price = by_url[site_thread.url(f"/products/{n}")]
        assert sku == product(n).sku
        assert (price if price == price else None) == product(n).price  # NaN: sold out


def test_a_run_killed_mid_way_leaves_no_row_a_status_file_does_not_hold(
    dagster_home: Path, site_thread: SiteThread, tmp_path: Path, layout: DataLayout
) -> None:
    selectors = tmp_path / "titles.yaml"
    selectors.write_text("fields:\n  title: 'title::text'\n")
    # 80 pages answering after a second, 8 at a time (the per-host limit): ~10 s of run.
    rows = [(f"k-{n:02d}", site_thread.url(f"/slow/1?n={n}")) for n in range(80)]
    env = process_env(dagster_home, layout.root)
    added = subprocess.run(
        [str(BIN_DIR / "scrapeflow"), "tasks", "add", str(write_csv(tmp_path / "t.csv", rows)),
         "--extract", str(selectors)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    run = subprocess.Popen(
        [str(BIN_DIR / "dagster"), "asset", "materialize", "-m", "scrapeflow_dagster.definitions",
         "--select", "scrape,validation,pages", "--partition-range", "k-00...k-79"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip

    def extracted_files() -> list[str]:
        return [
            path.name.removesuffix(".status.json")
            for path in layout.status_dir.glob("*.status.json")
            if (json.loads(path.read_text()).get("pages") or {}).get("extracted")
        ]

    try:
        wait_until(
            lambda: len(extracted_files()) >= 8,
            what="pages extracted",
            timeout_seconds=120,
            poll_seconds=0.1,
        )
    finally:
        kill_group(run)  # SIGKILL: the run and its step processes, mid-way
    synced = subprocess.run(
        [str(BIN_DIR / "scrapeflow"), "db", "sync"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert synced.returncode == 0, synced.stderr

    held = set(extracted_files())
    rows_in_duckdb = set(read_extracted(layout.db_path)["key"])
    assert 8 <= len(held) < len(rows), "the kill came too late to test anything"
    # Each row stands for a status file that holds the extraction (rows are spooled after the
    # file is written); a file written just before the kill may lack its row until a rebuild.
    assert rows_in_duckdb <= held
    assert len(rows_in_duckdb) >= len(held) - 8


def test_page_text_and_markdown_are_settings_of_a_dagster_run(
    run_command: Run, site_thread: SiteThread, tmp_path: Path, layout: DataLayout
) -> None:
    rows = [(f"t-{n}", site_thread.url(f"/products/{n}")) for n in range(3)]
    added = run_command("scrapeflow", "tasks", "add", str(write_csv(tmp_path / "t.csv", rows)))
    assert added.returncode == 0, added.stderr
    settings = {"page_text_max_chars": 30, "page_markdown": True}
    config = {"resources": {"scrape_settings": {"config": settings}}}

    done = run_command(
        "dagster", "asset", "materialize", "-m", "scrapeflow_dagster.definitions",
        "--select", "scrape,validation,pages", "--partition-range", "t-0...t-2",
        "--config-json", json.dumps(config),
    )  # fmt: skip

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    exported = tmp_path / "text.jsonl"
    assert run_command("scrapeflow", "export", "page_text", "-o", str(exported)).returncode == 0
    texts = {row["key"]: row for row in map(json.loads, exported.read_text().splitlines())}
    assert sorted(texts) == ["t-0", "t-1", "t-2"]
    for n in range(3):
        row = texts[f"t-{n}"]
        assert row["text"] == f"Back to the list\n\n{product(n).name}"[:30]
        assert row["markdown"] == "[Back to the list](/products/list/0)\n\n"[:30]
        assert row["text_chars"] > 30 and row["markdown_chars"] > 30
