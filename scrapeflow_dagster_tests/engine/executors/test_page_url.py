"""A page's links are resolved against the real URL it came from, not the redacted one its
status file stores: a mask must never end up in a URL the page did not link."""

import json
from pathlib import Path

from scrapeflow_dagster.engine.executor import execute_async
from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.executors.stored_body import page_url
from scrapeflow_dagster_tests.engine.gate.sites import Site, redirect, text

PAGE = '<a href="next">next</a><a href="../up">up</a>'


async def test_links_of_a_page_whose_url_holds_a_secret_keep_the_real_url(tmp_path: Path) -> None:
    site = Site("127.0.0.1")
    # `token=` in the path is redacted in what is stored, as in a query.
    site.routes["/api/token=abc/page"] = text(PAGE, "text/html")
    site.routes["/moved"] = redirect("/api/token=abc/page")
    await site.start()
    try:
        tasks = {
            "own": {"url": f"{site.base}/api/token=abc/page"},
            "moved": {"url": f"{site.base}/moved"},
        }
        await execute_async([scrape, pages], tmp_path, tasks)
    finally:
        await site.stop()
    own = json.loads((tmp_path / "own.status.json").read_text())
    # Stored redacted: the mask takes the rest of the path as the secret's value.
    assert own["scrape"]["final_url"] == f"{site.base}/api/token=***"
    assert own["pages"]["links"] == [f"{site.base}/api/token=abc/next", f"{site.base}/api/up"]
    # Redirected into a URL holding a secret the task's URL does not: the real one is kept
    # nowhere, so its links are resolved against the stored one (a known limit).
    moved = json.loads((tmp_path / "moved.status.json").read_text())
    assert moved["pages"]["links"][0] == f"{site.base}/api/next"


def test_page_url_takes_the_task_url_only_when_it_is_what_was_redacted() -> None:
    params = {"url": "http://h/p?token=abc"}
    assert page_url(params, None) == "http://h/p?token=abc"
    assert page_url(params, "http://h/p?token=***") == "http://h/p?token=abc"
    assert page_url(params, "http://h/q") == "http://h/q"  # no mask: as stored
    assert page_url(params, "http://h/q?token=***") == "http://h/q?token=***"
