"""Bad input, through `scrapeflow tasks add` and through the inbox sensor: every bad line is
refused naming its file and line, the good lines beside it are added, a 100 MB line costs
neither time nor memory, and nothing recorded before changes by a single byte.

Also: a status file broken by hand fails its own task only (and is left as it is), and a data
folder that cannot be created is a clear error naming it (exit code 2).
"""

import re
import subprocess
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
import pytest

from scrapeflow_dagster.defs.sensors import inbox_sensor, retry_sensor
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.status import load_status
from scrapeflow_dagster.engine.tasks.keys import request_key
from scrapeflow_dagster.lib.partitions import TASKS_PARTITIONS_NAME
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.reliability.conftest import Homes
from scrapeflow_dagster_tests.reliability.helpers import (
    assert_failed_only_through_tasks,
    scrape_range,
    scrapeflow,
    snapshot_files,
)
from scrapeflow_dagster_tests.support.ledger import current_state, query
from scrapeflow_dagster_tests.support.partitions import partition_statuses
from scrapeflow_dagster_tests.support.paths import PYTHON
from scrapeflow_dagster_tests.support.sensors import sensor_context
from scrapeflow_dagster_tests.support.tasks import store_and_add

HUGE_LINE_BYTES = 100 * 1024 * 1024
EARLIER = [f"earlier-{n}" for n in range(5)]
# `scrapeflow` itself, reporting its peak memory (ru_maxrss, KiB) on stderr as it exits.
_MEASURED_CLI = """
import resource
import sys

from scrapeflow_dagster.cli import main

code = main(sys.argv[1:])
print(f"maxrss_kib={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", file=sys.stderr)
sys.exit(code)
"""


@dataclass
class BadFiles:
    """Task files full of bad lines, what must be refused (file name, line -> words of the
    reason) and the tasks the good lines beside them make (key -> URL)."""

    paths: list[Path] = field(default_factory=list)
    refused: dict[tuple[str, int], str] = field(default_factory=dict)
    good: dict[str, str] = field(default_factory=dict)


def write_bad_files(folder: Path, prefix: str, base_url: str, earlier_key: str) -> BadFiles:
    """Write the bad task files (keys start with `prefix`) into `folder`."""
    files = BadFiles()
    p, b = prefix, base_url
    csv_lines = [
        ("key,url,country", None),
        (f"{p}good-1,{b}/page/1,", "good"),
        (f'{p}quote,"{b}/page/2,', "malformed CSV"),
        (f"{p}fields,{b}/page/3,de,extra", "4 fields where the header has 3"),
        (f"{p}bad-url,not a url,", "only http and https"),
        (f"{p}file,file:///etc/passwd,", "only http and https"),
        (f"{p}ftp,ftp://example.com/x,", "only http and https"),
        (f"{p}js,javascript:alert(1),", "only http and https"),
        (f"../{p}x,{b}/page/4,", "'../"),
        (f"{p}a/b,{b}/page/4,", "contains '/'"),
        (f"{p}a...b,{b}/page/4,", "contains '..'"),
        (f'"{p}a,b",{b}/page/5,', "contains ','"),
        (f"{p}good-2,{b}/page/6,", "good"),
        (f"{p}good-1,{b}/page/7,", f"different params (from {folder / f'{p}tasks.csv'}:2)"),
        (f"{p}good-2,{b}/page/6,", None),  # the same task twice: simply known
        ("", None),
        (f"{earlier_key},{b}/page/999,", "different params (url differ) (from its status file)"),
        (f"{p}good-3,{b}/page/8,DE", "good"),
    ]
    jsonl_lines = [
        (f'{{"key": "{p}j-good-1", "url": "{b}/page/11"}}', "good"),
        (f'{{"key": "{p}j-cut", "url": ', "not valid JSON"),
        (f'{{"key": "{p}a\\nb", "url": "{b}/page/12"}}', "control character"),
        ("[1, 2]", "a JSON object with a 'url' is expected"),
        (f'{{"key": "{p}j-ftp", "url": "ftp://example.com/y"}}', "only http and https"),
        (f'{{"url": "{b}/page/13"}}', "good"),
        (f'{{"key": "{p}j-hdr", "url": "{b}/page/14", "headers": "{{oops"}}', "headers is not"),
        (f'{{"key": "{p}j-good-2", "url": "{b}/page/15", "cookies": {{"a": "1"}}}}', "good"),
    ]
    for name, lines in ((f"{p}tasks.csv", csv_lines), (f"{p}tasks.jsonl", jsonl_lines)):
        path = folder / name
        path.write_text("".join(f"{text}\n" for text, _ in lines))
        files.paths.append(path)
        for number, (_, expect) in enumerate(lines, start=1):
            if expect not in (None, "good"):
                files.refused[(name, number)] = expect
    good_urls = {
        f"{p}good-1": f"{b}/page/1",
        f"{p}good-2": f"{b}/page/6",
        f"{p}good-3": f"{b}/page/8",
        f"{p}j-good-1": f"{b}/page/11",
        f"{p}j-good-2": f"{b}/page/15",
    }
    for url in (f"{b}/page/13", f"{b}/page/16"):
        good_urls[request_key(url)] = url
    files.good = good_urls

    empty = folder / f"{p}empty.txt"
    empty.write_bytes(b"")
    huge = folder / f"{p}huge.txt"
    with huge.open("wb") as out:
        chunk = b"a" * (1 << 20)
        for _ in range(HUGE_LINE_BYTES // len(chunk)):
            out.write(chunk)
        out.write(f"\n# a comment\n{b}/page/16\n".encode())
    files.paths += [empty, huge]
    files.refused[(huge.name, 1)] = "line is longer than"
    return files


@pytest.fixture
def site() -> Iterator[SiteThread]:
    with SiteThread(pages=1000, page_bytes=2000) as running:
        yield running


@pytest.fixture
def earlier(site: SiteThread, homes: Homes, instance: dg.DagsterInstance) -> dict[str, bytes]:
    """Tasks added and scraped before the bad input arrives; returns the status folder's
    files (status files and bodies), byte for byte."""
    keys = store_and_add(
        homes.layout, instance, [(k, site.url(f"/page/{500 + n}")) for n, k in enumerate(EARLIER)]
    )
    assert scrape_range(instance, homes.data_dir, keys[0], keys[-1]).success
    files = snapshot_files(homes.layout.status_dir)
    assert len(files) == 2 * len(EARLIER)
    return files


def refused_lines(lines: list[str]) -> dict[tuple[str, int], str]:
    """`(file name, line) -> message` of `<path>:<line>: <message>` texts."""
    found: dict[tuple[str, int], str] = {}
    for text in lines:
        path, line, message = text.split(":", 2)
        found[(Path(path).name, int(line))] = message
    return found


def assert_refused_as_expected(found: dict[tuple[str, int], str], files: BadFiles) -> None:
    assert sorted(found) == sorted(files.refused)
    for where, words in files.refused.items():
        assert words in found[where], (where, found[where])


def assert_good_tasks_stored(layout: DataLayout, files: BadFiles) -> None:
    for key, url in files.good.items():
        status = load_status(layout.status_dir, key)
        assert status is not None, key
        assert status["params"]["url"] == url, key


def test_bad_task_files_through_the_cli(
    site: SiteThread, homes: Homes, instance: dg.DagsterInstance, earlier: dict[str, bytes]
) -> None:
    files = write_bad_files(homes.root, "cli-", site.base_url, EARLIER[0])
    small = [str(p) for p in files.paths if not p.name.endswith("huge.txt")]

    added = scrapeflow(["tasks", "add", *small], homes.env())

    assert added.returncode == 1, added.stderr  # lines were refused
    errors = [line for line in added.stderr.splitlines() if line.startswith("refused: ")]
    found = refused_lines([line.removeprefix("refused: ") for line in errors])
    found.update(huge_line_through_the_cli(files, homes))
    assert_refused_as_expected(found, files)
    assert "cli-empty.txt: 0 valid tasks" in added.stdout
    assert_good_tasks_stored(homes.layout, files)
    # Partitions for the good lines only; the conflicting lines changed no stored params.
    assert set(instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME)) == {*EARLIER, *files.good}
    now = snapshot_files(homes.layout.status_dir)
    assert {name: now[name] for name in earlier} == earlier


def huge_line_through_the_cli(files: BadFiles, homes: Homes) -> dict[tuple[str, int], str]:
    """Add the file with the 100 MB line without holding the line in memory."""
    huge = next(p for p in files.paths if p.name.endswith("huge.txt"))
    empty = next(p for p in files.paths if p.name.endswith("empty.txt"))
    baseline = measured_cli(["tasks", "add", str(empty)], homes)
    done = measured_cli(["tasks", "add", str(huge)], homes)
    assert done.returncode == 1, done.stderr
    peak_growth_mib = (peak_kib(done) - peak_kib(baseline)) / 1024
    assert peak_growth_mib < 64, f"adding a 100 MB line grew the process by {peak_growth_mib} MiB"
    lines = [ln.removeprefix("refused: ") for ln in done.stderr.splitlines() if "refused" in ln]
    return refused_lines(lines)


def measured_cli(args: list[str], homes: Homes) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-c", _MEASURED_CLI, *args],
        env=homes.env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def peak_kib(done: subprocess.CompletedProcess[str]) -> int:
    line = next(ln for ln in done.stderr.splitlines() if ln.startswith("maxrss_kib="))
    return int(line.split("=", 1)[1])


def test_bad_task_files_through_the_inbox_sensor(
    site: SiteThread, homes: Homes, instance: dg.DagsterInstance, earlier: dict[str, bytes]
) -> None:
    inbox = homes.layout.inbox_dir
    files = write_bad_files(inbox, "inbox-", site.base_url, EARLIER[0])
    context = sensor_context(instance, homes.data_dir)

    tracemalloc.start()
    try:
        result = inbox_sensor(context)
        _, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert peak_bytes < 32 * 1024 * 1024, f"peak {peak_bytes} bytes for a 100 MB line"
    assert isinstance(result, dg.SensorResult)
    # Partitions are added through the instance before a file moves, not left to the result.
    assert not result.dynamic_partitions_requests
    added = set(instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME)) - set(EARLIER)
    assert sorted(added) == sorted(files.good)
    assert result.run_requests and all(
        r.asset_selection[0] == dg.AssetKey("scrape") for r in result.run_requests
    )
    done = inbox / "done"
    assert not [p for p in inbox.iterdir() if p.is_file()]  # every file taken in
    reports = sorted(done.glob("*.errors.txt"))
    # done/<stamp>-<digest>-<name>.errors.txt
    assert {p.name.split("-", 2)[2].removesuffix(".errors.txt") for p in reports} == {
        "inbox-tasks.csv",
        "inbox-tasks.jsonl",
        "inbox-huge.txt",
    }
    lines = [line for p in reports for line in p.read_text().splitlines()]
    assert_refused_as_expected(refused_lines(lines), files)
    assert_good_tasks_stored(homes.layout, files)
    now = snapshot_files(homes.layout.status_dir)
    assert {name: now[name] for name in earlier} == earlier


def test_a_status_file_broken_by_hand_fails_its_task_only(
    site: SiteThread, homes: Homes, instance: dg.DagsterInstance, earlier: dict[str, bytes]
) -> None:
    layout = homes.layout
    fresh = store_and_add(
        layout, instance, [(f"fresh-{n}", site.url(f"/page/{n}")) for n in range(5)]
    )
    broken = layout.status_dir / "fresh-2.status.json"
    cut = broken.read_bytes()[:25]  # an editor's save cut short: not JSON any more
    broken.write_bytes(cut)
    keys = EARLIER + fresh

    result = scrape_range(instance, homes.data_dir, keys[0], keys[-1])

    assert_failed_only_through_tasks(result, failed=1)
    assert broken.read_bytes() == cut  # reported, not overwritten
    state = current_state(layout.db_path, "scrape")
    assert state["fresh-2"]["status"] == "ERROR"
    assert (state["fresh-2"]["error_class"], state["fresh-2"]["error_kind"]) == (
        "StatusFileError",
        "permanent",
    )
    message = query_message(layout, "fresh-2")
    assert str(broken) in message and "not valid JSON" in message
    statuses = {k: load_status(layout.status_dir, k) for k in fresh if k != "fresh-2"}
    assert all(s is not None and s["scrape_status"] == "SUCCESS" for s in statuses.values())
    now = snapshot_files(layout.status_dir)
    assert {name: now[name] for name in earlier} == earlier  # skipped, not rewritten
    found = partition_statuses(instance, "scrape", keys)
    assert {k for k, v in found.items() if v != dg.AssetPartitionStatus.MATERIALIZED} == {"fresh-2"}

    # The retry sensor leaves it alone (a broken file is not retried in a loop) ...
    plan = retry_sensor(sensor_context(instance, homes.data_dir))
    requests = [] if isinstance(plan, dg.SkipReason) else plan.run_requests
    assert not [r for r in requests if r.asset_selection == [dg.AssetKey("scrape")]]
    # ... adding it again says which file is broken, and leaves it as it is ...
    task_file = homes.root / "again.csv"
    task_file.write_text(f"key,url\nfresh-2,{site.url('/page/2')}\n")
    added = scrapeflow(["tasks", "add", str(task_file)], homes.env())
    assert added.returncode == 1
    assert f"{task_file}:2: status file {broken}" in added.stderr
    assert broken.read_bytes() == cut
    # ... and the DuckDB rebuild skips it by name while it takes in every other file.
    rebuilt = scrapeflow(["db", "rebuild"], homes.env())
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert f"unreadable: {broken}" in rebuilt.stderr
    assert broken.read_bytes() == cut


def query_message(layout: DataLayout, key: str) -> str:
    rows = query(
        layout.db_path,
        "SELECT message FROM current_state WHERE executor = 'scrape' AND key = ?",
        [key],
    )
    return str(rows[0][0])


def test_an_unusable_data_folder_is_a_clear_error(
    site: SiteThread, homes: Homes, instance: dg.DagsterInstance
) -> None:
    blocker = homes.root / "file.txt"
    blocker.write_text("a regular file where a folder should be\n")
    data_dir = blocker / "data"
    env = homes.env(SCRAPEFLOW_DATA_DIR=str(data_dir))
    task_file = homes.root / "tasks.csv"
    task_file.write_text(f"key,url\nt1,{site.url('/page/1')}\n")

    for args in (["tasks", "add", str(task_file)], ["db", "sync"], ["db", "rebuild"]):
        done = scrapeflow(args, env)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert str(data_dir) in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
    assert blocker.read_text().startswith("a regular file")

    # In Dagster, a broken environment fails the sensor and the run as a whole, naming the path.
    with pytest.raises(OSError, match=re.escape(str(data_dir))):
        inbox_sensor(sensor_context(instance, data_dir))
    instance.add_dynamic_partitions(TASKS_PARTITIONS_NAME, ["t1"])
    result = scrape_range(instance, data_dir, "t1", "t1")
    assert not result.success
    (failure,) = result.get_step_failure_events()
    error = failure.step_failure_data.error
    assert error is not None and error.cls_name != "Failure"
    assert str(data_dir) in error.to_string()
