"""Default keys name the host and the path, so a partition is readable in the Dagster UI, and a
task stored under an older (bare hash) key keeps it."""

from pathlib import Path

import pytest

from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.state.files import load_status, write_status
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.schema import new_status
from scrapeflow_dagster.engine.tasks.adding import add_tasks
from scrapeflow_dagster.engine.tasks.intake import read_task_file
from scrapeflow_dagster.engine.tasks.keys import (
    MAX_KEY_LENGTH,
    request_fingerprint,
    request_key,
    validate_key,
)

CASES = [
    ("http://127.0.0.1:8765/page/5", "GET", "127.0.0.1-page-5-"),
    (
        "https://www.Example.com/products/Shoes/Air%20Max?x=1",
        "GET",
        "www.example.com-shoes-air-max-",
    ),
    ("https://example.com/", "GET", "example.com-"),
    ("https://example.com/a/../b..c/d", "GET", "example.com-b.c-d-"),
    ("https://пример.рф/путь", "GET", "xn--e1afmkfd.xn--p1ai-"),
    ("https://api.example.com/search", "POST", "api.example.com-post-search-"),
]


@pytest.mark.parametrize(("url", "method", "prefix"), CASES)
def test_default_keys_start_with_host_and_slug_and_end_with_a_fingerprint(
    url: str, method: str, prefix: str
) -> None:
    body = {"q": 1} if method == "POST" else None
    key = request_key(url, method=method, body=body)

    assert key.startswith(prefix), key
    assert key.endswith(request_fingerprint(url, method=method, body=body)[:12])
    assert validate_key(key) == key and len(key) <= MAX_KEY_LENGTH
    # Dagster's own rules for partition keys (INVALID_PARTITION_SUBSTRINGS)
    assert "..." not in key and not any(c in key for c in "\a\b\f\n\r\t\v\0")


def test_a_long_url_still_makes_a_short_valid_key() -> None:
    key = request_key("https://" + "h" * 250 + ".com/" + "seg/" * 100 + "x" * 300)
    assert validate_key(key) == key and len(key) <= MAX_KEY_LENGTH


def test_a_task_stored_under_its_old_hash_key_keeps_it(tmp_path: Path) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    url = "http://127.0.0.1:9/page/1"
    legacy = request_fingerprint(url)
    write_status(layout.status_dir, legacy, new_status(legacy, {"url": url}))
    tasks = tmp_path / "again.txt"
    tasks.write_text(f"{url}\nhttp://127.0.0.1:9/page/2\n")

    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        report = add_tasks(layout, read_task_file(tasks), ledger=ledger)

    assert report.keys == [legacy, request_key("http://127.0.0.1:9/page/2")]
    assert (report.new, report.unchanged) == (1, 1)
    assert load_status(layout.status_dir, request_key(url)) is None  # no second task
