"""The `extracted` table follows what the status files hold: a row per extraction, gone when the
task's set no longer applies or its step fails later, and the same after `db rebuild`."""

import json
from pathlib import Path

from scrapeflow_dagster.engine.executors.extract import extract
from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.extract import install_selector_set
from scrapeflow_dagster.engine.history import rebuild_from_status_dir
from scrapeflow_dagster.engine.run.step import run_chain
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.content.products import product
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.engine.history.helpers import query
from scrapeflow_dagster_tests.support.tasks import add_task_file

SETTINGS = ScrapeSettings(request_timeout_seconds=5.0)
EVERYTHING = "SELECT * FROM extracted ORDER BY key, executor"

HEADER = "key,url,extract"  # a task names its selector set


def _set(folder: Path, urls: str) -> Path:
    path = folder / "shop.yaml"
    path.write_text(
        f"urls: '{urls}'\nfields:\n  name: 'h1::text'\n"
        "  price: {css: 'span.price', type: number}\n  sku: '[itemprop=sku]'\n"
    )
    return path


async def test_rows_follow_the_status_files_and_a_rebuild_agrees(
    site: LocalSite, tmp_path: Path
) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    install_selector_set(layout.status_dir, _set(tmp_path, "/products/"))
    keys = add_task_file(
        layout, [f"p{n},{site.url(f'/products/{n}')},shop" for n in range(1, 8)], header=HEADER
    )
    # A task that names no set: no row.
    keys += add_task_file(layout, [f"plain,{site.url('/products/1')},"], header=HEADER)

    await run_chain(layout, [scrape, pages], keys, settings=SETTINGS)

    rows = query(layout.db_path, "SELECT key, selectors, url, fields, missing FROM extracted")
    got = {key: (sel, url, json.loads(fields), missing) for key, sel, url, fields, missing in rows}
    assert sorted(got) == [f"p{n}" for n in range(1, 8)]
    for n in range(1, 8):
        item = product(n)
        assert got[f"p{n}"] == (
            "shop",
            site.url(f"/products/{n}"),
            {"name": item.name, "price": item.price, "sku": item.sku},
            [] if item.price is not None else ["price"],  # product 6 is sold out
        )
        status = json.loads((layout.status_dir / f"p{n}.status.json").read_text())
        assert status["pages"]["extracted"]["fields"] == got[f"p{n}"][2]
    before = query(layout.db_path, EVERYTHING)

    rebuild_from_status_dir(layout.status_dir, layout.db_path)
    assert [r[:-1] for r in query(layout.db_path, EVERYTHING)] == [r[:-1] for r in before]

    # The set now applies to other URLs: parsed again, the pages have no extraction left.
    install_selector_set(layout.status_dir, _set(tmp_path, "/elsewhere/"))
    await run_chain(layout, [scrape, pages], keys[:3], settings=SETTINGS, force=True)
    assert [r[0] for r in query(layout.db_path, EVERYTHING)] == [f"p{n}" for n in range(4, 8)]

    # A set that is gone fails the step, naming it; the row goes as the status file's output.
    (layout.status_dir / ".extract" / "shop.yaml").unlink()
    report = await run_chain(layout, [scrape, pages], ["p4"], settings=SETTINGS, force=True)
    assert "selector set 'shop' is not in" in (report["pages"].errors["p4"].message or "")
    assert [r[0] for r in query(layout.db_path, EVERYTHING)] == [f"p{n}" for n in range(5, 8)]
    rebuild_from_status_dir(layout.status_dir, layout.db_path)
    assert [r[0] for r in query(layout.db_path, EVERYTHING)] == [f"p{n}" for n in range(5, 8)]


async def test_the_extract_executor_does_the_same_as_a_step_of_its_own(
    site: LocalSite, tmp_path: Path
) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    install_selector_set(layout.status_dir, _set(tmp_path, "/products/"))
    keys = add_task_file(
        layout, [f"x{n},{site.url(f'/products/{n}')},shop" for n in (2, 3)], header=HEADER
    )
    keys += add_task_file(layout, [f"none,{site.url('/products/4')},"], header=HEADER)

    await run_chain(layout, [scrape, extract], keys, settings=SETTINGS)

    rows = query(layout.db_path, "SELECT key, executor, fields FROM extracted ORDER BY key")
    assert [(key, executor, json.loads(fields)) for key, executor, fields in rows] == [
        (
            f"x{n}",
            "extract",
            {"name": product(n).name, "price": product(n).price, "sku": product(n).sku},
        )
        for n in (2, 3)
    ]
    status = json.loads((layout.status_dir / "none.status.json").read_text())
    assert status["extract"]["extracted"] is None  # a task without a set: succeeded, no row
