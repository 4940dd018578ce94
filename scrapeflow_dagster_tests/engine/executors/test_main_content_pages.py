"""A page's main content and metadata (`page_main_content`) kept by `pages` once per page in the
`main_content` table: cut as the text is, out of `outputs`, restored by `db rebuild`, exported,
removed when turned off, and nothing of it when the setting is off (the default)."""

import json
import subprocess
from collections.abc import AsyncIterator
from datetime import date
from pathlib import Path

import duckdb
import pytest
from aiohttp import web

from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.history import rebuild_from_status_dir
from scrapeflow_dagster.engine.run.step import run_chain
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.lib.scrape_settings import ScrapeSettingsResource
from scrapeflow_dagster.site.content.products import product
from scrapeflow_dagster.site.server import LocalSite, SiteThread
from scrapeflow_dagster_tests.engine.history.helpers import query
from scrapeflow_dagster_tests.support.paths import BIN_DIR
from scrapeflow_dagster_tests.support.processes import init_dagster_home, process_env
from scrapeflow_dagster_tests.support.tasks import add_task_file

# A news article with its metadata in its head, and a menu, related links and a cookie banner.
ARTICLE = Path(__file__).parents[1] / "content" / "pages" / "article-news.html"
ARTICLE_PATH = "/city/night-ferry-winter"
MAIN_COLUMNS = (
    "key, text, text_chars, markdown, markdown_chars, title, author, published, modified, "
    "language, canonical_url, description, site_name, extracted_by"
)


@pytest.fixture
async def article_site() -> AsyncIterator[str]:
    """A real HTTP server on 127.0.0.1 serving the article; its base URL."""
    body = ARTICLE.read_bytes()

    async def article(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="text/html", charset="utf-8")

    app = web.Application()
    app.add_routes([web.get(ARTICLE_PATH, article)])
    runner = web.AppRunner(app)
    await runner.setup()
    server = web.TCPSite(runner, "127.0.0.1", 0)
    await server.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def main_rows(db_path: Path) -> dict[str, tuple]:
    rows = query(db_path, f"SELECT {MAIN_COLUMNS} FROM main_content ORDER BY key")
    return {row[0]: row[1:] for row in rows}


async def test_main_content_and_metadata_are_kept_per_page_rebuilt_cut_and_removed(
    site: LocalSite, article_site: str, tmp_path: Path
) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    keys = add_task_file(layout, [f"p{n},{site.url(f'/products/{n}')}" for n in range(2)])
    keys += add_task_file(layout, [f"news,{article_site}{ARTICLE_PATH}"])
    on = ScrapeSettings(request_timeout_seconds=5.0, page_main_content=True)

    await run_chain(layout, [scrape, pages], keys, settings=on)

    got = main_rows(layout.db_path)
    assert sorted(got) == ["news", "p0", "p1"]
    text, chars, markdown, markdown_chars, *metadata = got["news"]
    assert text.startswith("Night ferry stays on through the winter\nThe city council voted")
    assert "Fares stay as they are." in text and chars == len(text)
    # What a reader of the whole page also sees, and the article does not say, is left out.
    for chrome in ("cookies", "Related", "Business and markets", "Courier Media Group"):
        assert chrome not in text and chrome not in markdown
    assert markdown.startswith("# Night ferry stays on through the winter\n")
    assert markdown_chars == len(markdown)
    assert metadata == [
        "Night ferry stays on through the winter",
        "Maren Holt",
        date(2026, 11, 3),
        date(2026, 11, 4),
        "en",
        "https://courier.example.net/city/night-ferry-winter",
        "The city council voted to keep the night ferry running through the winter, after a "
        "petition signed by four thousand residents.",
        "The Riverside Courier",
        "trafilatura",
    ]
    for n in range(2):
        assert product(n).name in got[f"p{n}"][0].splitlines()
    # Nothing new in `page_text` (its own setting is off), the text kept once: the status
    # file holds it, the `outputs` row its metadata and lengths only.
    assert query(layout.db_path, "SELECT count(*) FROM page_text") == [(0,)]
    status = json.loads((layout.status_dir / "news.status.json").read_text())
    assert status["pages"]["main_content"]["text"] == text
    assert status["pages"]["main_content"]["text_truncated"] is False
    ((output,),) = query(
        layout.db_path, "SELECT output FROM outputs WHERE executor = 'pages' AND key = 'news'"
    )
    kept = json.loads(output)["main_content"]
    assert "text" not in kept and "markdown" not in kept
    assert kept["text_chars"] == chars and kept["author"] == "Maren Holt"

    # A new DuckDB file rebuilt from the status files has the same rows.
    before = query(layout.db_path, "SELECT * EXCLUDE (run_id) FROM main_content ORDER BY key")
    layout.db_path.rename(tmp_path / "old.duckdb")
    rebuild_from_status_dir(layout.status_dir, layout.db_path)
    after = query(layout.db_path, "SELECT * EXCLUDE (run_id) FROM main_content ORDER BY key")
    assert after == before

    # Cut at `page_text_max_chars` when that is set, the length before the cut kept.
    cut = ScrapeSettings(
        request_timeout_seconds=5.0, page_main_content=True, page_text_max_chars=100
    )
    await run_chain(layout, [scrape, pages], ["news"], settings=cut, force=True)
    text, chars, markdown, markdown_chars, *_ = main_rows(layout.db_path)["news"]
    assert len(text) == 100 < chars and len(markdown) == 100 < markdown_chars

    # Turned off: parsed again, the pages keep none.
    off = ScrapeSettings(request_timeout_seconds=5.0)
    await run_chain(layout, [scrape, pages], ["news", "p0"], settings=off, force=True)
    assert sorted(main_rows(layout.db_path)) == ["p1"]


async def test_off_by_default_nothing_is_kept_and_an_older_file_gains_the_table(
    site: LocalSite, tmp_path: Path
) -> None:
    assert ScrapeSettings().page_main_content is False
    assert ScrapeSettingsResource().build().page_main_content is False
    layout = DataLayout(tmp_path / "data").ensure()
    keys = add_task_file(layout, [f"d{n},{site.url(f'/docs/{n}')}" for n in range(2)])

    await run_chain(layout, [scrape, pages], keys, settings=ScrapeSettings())

    assert main_rows(layout.db_path) == {}
    outputs = query(layout.db_path, "SELECT output FROM outputs WHERE executor = 'pages'")
    assert len(outputs) == 2 and all("main_content" not in json.loads(o) for (o,) in outputs)
    status = json.loads((layout.status_dir / "d0.status.json").read_text())
    assert "main_content" not in status["pages"]

    # A DuckDB file from before the table (dropped here) gains it at the next ingest.
    conn = duckdb.connect(str(layout.db_path))
    conn.execute("DROP TABLE main_content")
    conn.close()
    on = ScrapeSettings(request_timeout_seconds=5.0, page_main_content=True)
    await run_chain(layout, [scrape, pages], keys, settings=on, force=True)
    got = main_rows(layout.db_path)
    assert sorted(got) == ["d0", "d1"]
    assert got["d0"][0].startswith("Docs 0\n") and got["d0"][4] == "Docs 0"


def test_a_dagster_run_keeps_main_content_which_db_rebuild_restores_and_export_writes(
    tmp_path: Path,
) -> None:
    home, layout = init_dagster_home(tmp_path / "home"), DataLayout(tmp_path / "data").ensure()
    env = process_env(home, layout.root)

    def run(program: str, *args: str) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [str(BIN_DIR / program), *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done

    def exported(name: str) -> dict[str, dict]:
        path = tmp_path / name
        run("scrapeflow", "export", "main_content", "-o", str(path))
        return {row["key"]: row for row in map(json.loads, path.read_text().splitlines())}

    with SiteThread(pages=10, page_bytes=2000) as site:
        tasks = tmp_path / "tasks.csv"
        tasks.write_text(
            "key,url\n" + "".join(f"m-{n},{site.url(f'/docs/{n}')}\n" for n in range(3))
        )
        run("scrapeflow", "tasks", "add", str(tasks))
        config = {"resources": {"scrape_settings": {"config": {"page_main_content": True}}}}
        run(
            "dagster", "asset", "materialize", "-m", "scrapeflow_dagster.definitions",
            "--select", "scrape,validation,pages", "--partition-range", "m-0...m-2",
            "--config-json", json.dumps(config),
        )  # fmt: skip

    rows = exported("main.jsonl")
    assert sorted(rows) == ["m-0", "m-1", "m-2"]
    for n in range(3):
        row = rows[f"m-{n}"]
        assert row["text"].startswith(f"Docs {n}\n") and row["text_chars"] == len(row["text"])
        assert row["markdown"].startswith(f"# Docs {n}\n") and row["title"] == f"Docs {n}"
        assert row["extracted_by"] == "trafilatura"
    layout.db_path.rename(tmp_path / "aside.duckdb")
    run("scrapeflow", "db", "rebuild")
    rebuilt = exported("rebuilt.jsonl")
    assert {k: {**r, "run_id": None} for k, r in rebuilt.items()} == {
        k: {**r, "run_id": None} for k, r in rows.items()
    }


def test_the_setting_is_refused_naming_the_extra_when_trafilatura_is_missing() -> None:
    # A process in which trafilatura cannot be imported, as in an install without the extra.
    code = (
        "import sys; sys.modules['trafilatura'] = None\n"
        "from scrapeflow_dagster.lib.scrape_settings import ScrapeSettingsResource\n"
        "ScrapeSettingsResource().build()\n"
        "ScrapeSettingsResource(page_main_content=True).build()\n"
    )
    done = subprocess.run(
        [str(BIN_DIR / "python"), "-c", code], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "ValueError: page_main_content needs trafilatura: pip install 'scrapeflow-dagster[content]'"
    )
