"""A parsed page's readable text (and Markdown, by setting) kept once per page in `page_text`,
cut at the setting's cap, out of `outputs` and the history, and restored by `db rebuild`."""

import json
from pathlib import Path

from scrapeflow_dagster.engine.executors.page_text import markdown_of, readable_text
from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.history import rebuild_from_status_dir
from scrapeflow_dagster.engine.run.step import run_chain
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.content.products import product
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.engine.history.helpers import query
from scrapeflow_dagster_tests.support.tasks import add_task_file

PAGE = """<html><head><title>Not body text</title><style>p {color: red}</style></head>
<body><h1>Blue widget</h1><script>var hidden = 1;</script>
<p>Sturdy and <b>small</b>.</p><ul><li>one</li><li>two</li></ul>
<p><a href="/more">More</a></p></body></html>"""


def test_the_text_is_what_a_reader_sees_and_the_markdown_keeps_the_structure() -> None:
    assert readable_text(PAGE) == "Blue widget\n\nSturdy and small.\n\none\ntwo\n\nMore"
    assert markdown_of(PAGE) == (
        "# Blue widget\n\nSturdy and **small**.\n\n* one\n* two\n\n[More](/more)"
    )
    assert readable_text("") == "" and markdown_of("") == ""


async def test_text_and_markdown_are_kept_per_page_cut_at_the_cap_and_rebuilt(
    site: LocalSite, tmp_path: Path
) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    keys = add_task_file(layout, [f"p{n},{site.url(f'/products/{n}')}" for n in range(3)])
    keys += add_task_file(layout, [f"big,{site.url('/page/1')}"])  # ~2 KB of filler text
    cap = 1000
    settings = ScrapeSettings(
        request_timeout_seconds=5.0, page_text_max_chars=cap, page_markdown=True
    )

    await run_chain(layout, [scrape, pages], keys, settings=settings)

    rows = query(
        layout.db_path,
        "SELECT key, text, text_chars, markdown, markdown_chars FROM page_text ORDER BY key",
    )
    got = {row[0]: row[1:] for row in rows}
    assert sorted(got) == ["big", "p0", "p1", "p2"]
    for n in range(3):
        text, chars, markdown, _ = got[f"p{n}"]
        assert product(n).name in text.splitlines() and chars == len(text)
        assert f"# {product(n).name}" in markdown.splitlines()
    big_text, big_chars, big_markdown, big_markdown_chars = got["big"]
    assert len(big_text) == cap < big_chars and len(big_markdown) == cap < big_markdown_chars
    status = json.loads((layout.status_dir / "big.status.json").read_text())
    assert status["pages"]["text"] == big_text and status["pages"]["text_truncated"] is True
    # Kept once: not in the page's `outputs` row, nor in any history row.
    (output,) = query(
        layout.db_path, "SELECT output FROM outputs WHERE executor = 'pages' AND key = 'big'"
    )[0]
    assert "text" not in json.loads(output) and json.loads(output)["text_chars"] == big_chars
    before = query(layout.db_path, "SELECT * FROM page_text ORDER BY key")
    rebuild_from_status_dir(layout.status_dir, layout.db_path)
    assert [r[:-1] for r in query(layout.db_path, "SELECT * FROM page_text ORDER BY key")] == [
        r[:-1] for r in before
    ]

    # Text turned off: parsed again, the pages keep none.
    off = ScrapeSettings(request_timeout_seconds=5.0, page_text_max_chars=0)
    await run_chain(layout, [scrape, pages], keys[:2], settings=off, force=True)
    assert [r[0] for r in query(layout.db_path, "SELECT key FROM page_text ORDER BY key")] == [
        "big",
        "p2",
    ]
