"""Crawl params in task files: typed when valid, refused by line with the reason when not."""

from pathlib import Path

import pytest

from scrapeflow_dagster.engine.state.params import CrawlSettings, crawl_settings
from scrapeflow_dagster.engine.tasks.intake import LineError, TaskSpec, read_task_file


def test_csv_cells_become_typed_params(tmp_path: Path) -> None:
    path = tmp_path / "seeds.csv"
    path.write_text(
        "url,max_depth,scope,allow,deny,max_pages\n"
        'http://a.example/,3,domain,/graph/,"[""/private/"", ""\\\\.pdf$""]",40\n'
        "http://b.example/,,,,,\n"
    )
    first, second = list(read_task_file(path))
    assert isinstance(first, TaskSpec) and isinstance(second, TaskSpec)
    assert first.params == {
        "url": "http://a.example/",
        "max_depth": 3,
        "scope": "domain",
        "allow": ["/graph/"],
        "deny": ["/private/", "\\.pdf$"],
        "max_pages": 40,
    }
    assert second.params == {"url": "http://b.example/"}  # no crawl settings: stored as before
    assert crawl_settings(second.params) == CrawlSettings()


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"url": "http://a.example/", "max_depth": -1}', "max_depth must be a whole number >= 0"),
        ('{"url": "http://a.example/", "max_depth": "deep"}', "max_depth must be a whole number"),
        ('{"url": "http://a.example/", "max_pages": 0}', "max_pages must be a whole number >= 1"),
        ('{"url": "http://a.example/", "scope": "planet"}', "scope must be one of host, domain"),
        ('{"url": "http://a.example/", "allow": "(["}', "allow pattern '([' is not a valid regex"),
        ('{"url": "http://a.example/", "deny": [1]}', "deny must be a regex or a list"),
        ('{"url": "http://a.example/", "depth": 1.5}', "depth must be a whole number"),
    ],
)
def test_bad_crawl_params_are_refused_by_line(tmp_path: Path, line: str, reason: str) -> None:
    path = tmp_path / "seeds.jsonl"
    path.write_text('{"url": "http://ok.example/", "max_depth": 2}\n' + line + "\n")
    good, bad = list(read_task_file(path))
    assert isinstance(good, TaskSpec) and good.params["max_depth"] == 2
    assert isinstance(bad, LineError) and bad.line == 2
    assert reason in str(bad) and str(bad).startswith(f"{path}:2: ")
