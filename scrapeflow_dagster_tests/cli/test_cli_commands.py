"""`scrapeflow` builds only the parsers of the command it runs: the others are listed by name
with the lines their modules give them, and `scrapeflow status` loads neither the crawl engine
nor aiohttp."""

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from scrapeflow_dagster import cli
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster_tests.support.paths import REPO_ROOT
from scrapeflow_dagster_tests.support.tasks import add_task_file


def summaries(parser: argparse.ArgumentParser) -> list[tuple[str, str | None]]:
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return [(action.dest, action.help) for action in sub._choices_actions]


def test_every_command_is_listed_as_its_module_says_whichever_is_run() -> None:
    full = summaries(cli.build_parser())  # every module's own parsers

    assert [name for name, _ in full] == list(cli._SUMMARIES)
    for command in cli._SUMMARIES:
        assert summaries(cli.build_parser(command)) == full, command


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["status"], "status"),
        (["--data-dir", "status", "db", "summary"], "db"),  # a folder named like a command
        (["--data-dir=x", "tasks", "add", "f"], "tasks"),
        (["--help"], None),
        ([], None),
    ],
)
def test_the_command_is_the_first_word_that_is_not_an_option(
    argv: list[str], command: str | None
) -> None:
    assert cli.command_of(argv) == command


def test_status_loads_no_crawl_engine(tmp_path: Path) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    add_task_file(layout, ["t0,http://127.0.0.1:9/0"])
    code = (
        "import sys\n"
        "from scrapeflow_dagster.cli import main\n"
        f"assert main(['--data-dir', {str(tmp_path / 'data')!r}, 'status']) == 0\n"
        "loaded = [m for m in ('aiohttp', 'parsel', 'scrapeflow_dagster.cli.crawl',"
        " 'scrapeflow_dagster.engine.crawl', 'dagster') if m in sys.modules]\n"
        "print('loaded', loaded)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "loaded []"


def test_a_mistyped_command_lists_them_all(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "scrapeflow_dagster.cli", "stauts"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2
    assert "invalid choice: 'stauts'" in done.stderr and "'status'" in done.stderr


def test_the_crawl_command_follows_the_links_of_the_shipped_pages_executor() -> None:
    from scrapeflow_dagster.cli.crawl import LINKS_ASSET
    from scrapeflow_dagster.engine.crawl.discovery.discover import PAGES_EXECUTOR

    assert LINKS_ASSET == PAGES_EXECUTOR  # named, not imported: see `cli.crawl`'s imports
