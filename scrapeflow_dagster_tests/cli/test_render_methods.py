"""A page that loads its content by POST, as a user renders it: `scrapeflow tasks add` of the
bundled site's GraphQL-style page marked `render`, then the real `dagster asset materialize` of
the chain with its `render` step (`SCRAPEFLOW_RENDER=1`). The script's JSON POST goes through
the gate once, with its body and Content-Type, and the stored DOM and `pages` hold what it
loaded."""

import json
import urllib.request
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.content.graphql import GRAPHQL_ARTICLES, GRAPHQL_QUERY, article_title
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.engine.render.conftest import browser_available  # noqa: F401
from scrapeflow_dagster_tests.support.processes import process_env, run_installed

pytestmark = pytest.mark.usefixtures("browser_available")


def _api_requests(site: SiteThread) -> list[dict[str, str]]:
    with urllib.request.urlopen(site.url("/control/graphql"), timeout=5) as answer:
        seen: list[dict[str, str]] = json.loads(answer.read())["requests"]
    return seen


def test_a_page_that_loads_its_content_by_post_is_stored_with_it(
    dagster_home: Path, site_thread: SiteThread, tmp_path: Path, layout: DataLayout
) -> None:
    env = {**process_env(dagster_home, layout.root), "SCRAPEFLOW_RENDER": "1"}
    tasks = tmp_path / "tasks.csv"
    tasks.write_text(f"key,url,render\narticles,{site_thread.url('/graphql/?tag=cli')},true\n")
    added = run_installed(env, tmp_path, "scrapeflow", "tasks", "add", str(tasks))
    assert added.returncode == 0, added.stderr

    done = run_installed(
        env, tmp_path, "dagster", "asset", "materialize", "-m", "scrapeflow_dagster.definitions",
        "--select", "scrape,validation,render,pages", "--partition", "articles",
    )  # fmt: skip

    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    status = json.loads((layout.status_dir / "articles.status.json").read_text())
    assert status["render"]["rendered"] is True and status["render"]["refused"] == 0
    dom = (layout.status_dir / "articles.render").read_text()
    titles = [article_title(i) for i in range(GRAPHQL_ARTICLES)]
    assert all(f"<h2>{title}</h2>" in dom for title in titles)
    assert all(title in status["pages"]["text_start"] for title in titles)
    [seen] = _api_requests(site_thread)
    assert seen["method"] == "POST" and seen["content_type"] == "application/json"
    assert json.loads(seen["body"]) == {"query": GRAPHQL_QUERY, "variables": {"tag": "cli"}}
