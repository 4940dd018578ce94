"""Crash safety: status saved per step, bad status files isolated, clean cancellation, SIGKILL.

The SIGKILL test runs the scraper and the site in two separate processes, kills the scraper in
the middle of a 2,000-task run, and checks that a rerun finds consistent files and completes.
"""

import asyncio
import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from scrapeflow_dagster.engine.executor import (
    Context,
    ExecutorOutput,
    ExecutorResponse,
    execute_async,
    reads_stored_only,
)
from scrapeflow_dagster.engine.executors.pages import pages as builtin_pages
from scrapeflow_dagster.engine.executors.validation import validation as builtin_validation
from scrapeflow_dagster.engine.run.results import StepResult
from scrapeflow_dagster.engine.scrape import scrape as builtin_scrape
from scrapeflow_dagster.engine.status import (
    StatusData,
    load_status,
    parse_status_bytes,
    read_status,
    status_summary,
)
from scrapeflow_dagster.site.server import LocalSite

CRASH_TASKS = 2000
KILL_AFTER_STATUS_FILES = 300


async def test_each_step_is_saved_before_an_unexpected_exception(
    site: LocalSite, tmp_path: Path
) -> None:
    async def buggy(context: Context, status: StatusData) -> ExecutorResponse:
        raise KeyError("a bug in the second step")

    with pytest.raises(KeyError, match="a bug in the second step"):
        await execute_async([builtin_scrape, buggy], tmp_path, {"k": {"url": site.url("/page/1")}})

    status = load_status(tmp_path, "k")
    assert status is not None
    assert status["scrape_status"] == "SUCCESS"
    blob = (tmp_path / "k.scrape").read_bytes()
    assert status["scrape"]["content"] == hashlib.md5(blob).hexdigest()
    assert "buggy_status" not in status


async def test_every_reported_step_is_in_the_status_file_written_once_per_pass(
    site: LocalSite, tmp_path: Path
) -> None:
    """`validation` and `pages` only read the stored page: the fetch before them and both are
    saved in one write at the pass's end, and none is reported before the file holds it."""
    seen: list[tuple[str, int, dict]] = []

    def on_step(result: StepResult) -> None:
        path = tmp_path / "k.status.json"
        seen.append((result.executor, path.stat().st_ino, json.loads(path.read_bytes())))

    chain = [builtin_scrape, builtin_validation, builtin_pages]
    tasks = {"k": {"url": site.url("/page/1")}}
    assert await execute_async(chain, tmp_path, tasks, on_step=on_step) == ["k"]

    assert [executor for executor, _, _ in seen] == ["scrape", "validation", "pages"]
    for executor, _, on_disk in seen:
        assert on_disk[f"{executor}_status"] == "SUCCESS", executor
    assert len({inode for _, inode, _ in seen}) == 1  # one file written for the three


async def _requests_of(site: LocalSite, path: str, run: "asyncio.Future[object]") -> int:
    async with aiohttp.ClientSession() as session:
        await session.post(site.url("/control/requests/reset"))
        await run
        async with session.get(site.url("/control/requests")) as response:
            return int((await response.json())["paths"].get(path, 0))


async def test_a_crash_in_the_local_steps_after_a_fetch_redoes_the_pass(
    site: LocalSite, tmp_path: Path
) -> None:
    async def buggy(context: Context, status: StatusData) -> ExecutorResponse:
        raise KeyError("a bug in the local steps")

    buggy_local = reads_stored_only(buggy)
    reported: list[str] = []
    tasks = {"k": {"url": site.url("/page/1")}}
    with pytest.raises(KeyError, match="a bug in the local steps"):
        await execute_async(
            [builtin_scrape, builtin_validation, buggy_local],
            tmp_path,
            tasks,
            on_step=lambda result: reported.append(result.executor),
        )
    # The fetch was to be saved with the local steps after it: neither saved nor reported,
    # the file and the reports agree.
    assert reported == []
    assert load_status(tmp_path, "k") is None

    done = asyncio.ensure_future(
        execute_async(
            [builtin_scrape, builtin_validation],
            tmp_path,
            tasks,
            on_step=lambda result: reported.append(f"{result.executor} {result.outcome}"),
        )
    )
    assert await _requests_of(site, "/page/1", done) == 1  # fetched again, once
    assert done.result() == ["k"]
    assert reported == ["scrape SUCCESS", "validation SUCCESS"]


async def test_a_fetch_is_saved_before_a_step_that_requests_after_local_steps(
    site: LocalSite, tmp_path: Path
) -> None:
    """A step that requests is never held across another: `scrape` and `validation` are saved
    before the third step, which requests too; a crash there redoes only that step."""

    async def buggy(context: Context, status: StatusData) -> ExecutorResponse:
        raise KeyError("a bug in a step that requests")

    reported: list[str] = []
    tasks = {"k": {"url": site.url("/page/1")}}
    with pytest.raises(KeyError, match="a bug in a step that requests"):
        await execute_async(
            [builtin_scrape, builtin_validation, buggy],
            tmp_path,
            tasks,
            on_step=lambda result: reported.append(result.executor),
        )
    assert reported == ["scrape", "validation"]
    status = load_status(tmp_path, "k")
    assert status is not None
    assert status["scrape_status"] == status["validation_status"] == "SUCCESS"

    done = asyncio.ensure_future(
        execute_async(
            [builtin_scrape, builtin_validation],
            tmp_path,
            ["k"],
            on_step=lambda result: reported.append(f"{result.executor} {result.outcome}"),
        )
    )
    assert await _requests_of(site, "/page/1", done) == 0  # the page was not fetched again
    assert reported[2:] == ["scrape SKIPPED", "validation SKIPPED"]


async def test_a_failure_after_a_local_step_saves_and_reports_both_in_order(
    site: LocalSite, tmp_path: Path
) -> None:
    async def refuses(context: Context, status: StatusData) -> ExecutorResponse:
        raise RuntimeError("nothing to parse")

    reported: list[tuple[str, str, str]] = []

    def on_step(result: StepResult) -> None:
        on_disk = json.loads((tmp_path / "k.status.json").read_bytes())
        saved = on_disk[f"{result.executor}_status"].split()[0]  # "ERROR RuntimeError::..."
        reported.append((result.executor, result.outcome, saved))

    tasks = {"k": {"url": site.url("/page/1")}}
    await execute_async(
        [builtin_scrape, builtin_validation, refuses], tmp_path, tasks, on_step=on_step
    )

    assert reported == [
        ("scrape", "SUCCESS", "SUCCESS"),
        ("validation", "SUCCESS", "SUCCESS"),  # saved with the failure, reported before it
        ("refuses", "ERROR", "ERROR"),
    ]


async def test_bad_status_files_fail_only_their_own_task(
    site: LocalSite, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    whole = json.dumps({"name": "cut", "params": {"url": site.url("/page/1")}}, indent=2)
    bad = {
        "cut": whole[: len(whole) // 2].encode(),  # truncated by a crash of the original
        "foreign": b'{"hello": "world"}',
        "listed": b"[1, 2, 3]",
        "binary": b"\x89PNG\r\n\x1a\n\x00",
    }
    for key, content in bad.items():
        (tmp_path / f"{key}.status.json").write_bytes(content)
    tasks = {key: {"url": site.url(f"/page/{n}")} for n, key in enumerate([*bad, "ok1", "ok2"])}
    results: list[StepResult] = []

    done = await execute_async([builtin_scrape], tmp_path, tasks, on_step=results.append)

    assert sorted(done) == ["ok1", "ok2"]
    failed = {r.key: r for r in results if not r.ok}
    assert sorted(failed) == sorted(bad)
    for key, result in failed.items():
        path = str(tmp_path / f"{key}.status.json")
        assert result.error_class == "StatusFileError"
        assert path in (result.message or "")
        assert path in caplog.text
        assert (tmp_path / f"{key}.status.json").read_bytes() == bad[key]
    frame = read_status(tmp_path)
    assert list(frame.index) == ["ok1", "ok2"]
    assert sorted(Path(p).name for p, _ in frame.attrs["errors"]) == sorted(
        f"{key}.status.json" for key in bad
    )


async def test_unexpected_exception_cancels_siblings_without_false_errors(
    site: LocalSite, tmp_path: Path
) -> None:
    async def scrape(context: Context, status: StatusData) -> ExecutorResponse | ExecutorOutput:
        if status["name"] == "bug":
            await asyncio.sleep(0.5)
            raise KeyError("bug")
        return await builtin_scrape(context, status)

    # Slow tasks last: a task waits for an earlier one that shares its lock stripe.
    tasks = {f"fast{n}": {"url": site.url(f"/page/{n}")} for n in range(10)}
    tasks["bug"] = {"url": site.url("/page/99")}
    tasks |= {f"slow{n}": {"url": site.url("/slow/5")} for n in range(50)}
    started = time.monotonic()

    with pytest.raises(KeyError, match="bug"):
        await execute_async([scrape], tmp_path, tasks)

    assert time.monotonic() - started < 4  # the slow ones were cancelled, not awaited
    # (the site's own handlers share this loop and are still being torn down)
    names = [getattr(t.get_coro(), "__qualname__", "") for t in asyncio.all_tasks()]
    assert [name for name in names if "execute_async" in name] == []

    def snapshot() -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in tmp_path.glob("*.status.json")}

    files = snapshot()
    assert sorted(files) == sorted(f"fast{n}.status.json" for n in range(10))
    for content in files.values():
        assert json.loads(content)["scrape_status"] == "SUCCESS"
    await asyncio.sleep(0.5)
    assert snapshot() == files  # nothing left running writes later


# SIGKILL in the middle of a run, then a rerun.

SITE_SCRIPT = textwrap.dedent(
    f"""
    from scrapeflow_dagster.site.server import run_site_forever

    run_site_forever(
        port=0, pages={CRASH_TASKS}, page_bytes=5000, on_ready=lambda url: print(url, flush=True)
    )
    """
)

SCRAPER_SCRIPT = textwrap.dedent(
    """
    import asyncio
    import sys
    from pathlib import Path

    from scrapeflow_dagster.engine.executor import execute_async
    from scrapeflow_dagster.engine.scrape import scrape

    directory, base, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    tasks = {f"page-{n}": {"url": f"{base}/page/{n}"} for n in range(count)}
    asyncio.run(execute_async([scrape], directory, tasks, max_parallelism=50))
    """
)


@pytest.fixture
def site_process() -> Iterator[str]:
    """The local site served by another process; yields its base URL."""
    process = subprocess.Popen(
        [sys.executable, "-c", SITE_SCRIPT], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:"), "the site process did not start"
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def crash_tasks(base_url: str) -> dict[str, StatusData]:
    return {f"page-{n}": {"url": f"{base_url}/page/{n}"} for n in range(CRASH_TASKS)}


def status_file_count(directory: Path) -> int:
    with os.scandir(directory) as entries:
        return sum(1 for e in entries if e.name.endswith(".status.json"))


def check_files(directory: Path) -> Counter[str]:
    """Parse every status file; every SUCCESS must have its blob with the md5 it names."""
    outcomes: Counter[str] = Counter()
    for path in directory.glob("*.status.json"):
        status = parse_status_bytes(path.read_bytes(), path)
        key = path.name.removesuffix(".status.json")
        outcomes[status["scrape_status"]] += 1
        if status["scrape_status"] == "SUCCESS":
            blob = (directory / f"{key}.scrape").read_bytes()
            assert hashlib.md5(blob).hexdigest() == status["scrape"]["content"], key
            assert len(blob) == status["scrape"]["size"], key
    return outcomes


def run_and_kill(directory: Path, base_url: str) -> None:
    """Start the scraper process and SIGKILL it once some status files exist."""
    scraper = subprocess.Popen(
        [sys.executable, "-c", SCRAPER_SCRIPT, str(directory), base_url, str(CRASH_TASKS)]
    )
    deadline = time.monotonic() + 30
    try:
        while status_file_count(directory) < KILL_AFTER_STATUS_FILES:
            assert scraper.poll() is None, "the scraper ended before it could be killed"
            assert time.monotonic() < deadline, "the scraper wrote too few status files"
            time.sleep(0.005)
        scraper.send_signal(signal.SIGKILL)
    finally:
        if scraper.poll() is None:
            scraper.kill()
        scraper.wait()
    assert scraper.returncode == -signal.SIGKILL


@pytest.mark.slow
@pytest.mark.timeout(60)
async def test_sigkill_mid_run_then_rerun_completes(site_process: str, tmp_path: Path) -> None:
    directory = tmp_path / "status"
    directory.mkdir()
    run_and_kill(directory, site_process)

    before = check_files(directory)
    assert KILL_AFTER_STATUS_FILES <= before["SUCCESS"] < CRASH_TASKS
    assert set(before) == {"SUCCESS"}
    # Writes cut short leave dot-temp files; they must not get in the way.
    (directory / ".page-1.status.json.torn.tmp").write_text('{"name": "page-1", "par')
    (directory / ".page-2.scrape.torn.tmp").write_bytes(b"<html")
    results: list[StepResult] = []

    done = await execute_async(
        [builtin_scrape],
        directory,
        crash_tasks(site_process),
        max_parallelism=50,
        on_step=results.append,
    )

    assert len(done) == CRASH_TASKS
    outcomes = Counter(r.outcome for r in results)
    assert outcomes == {"SKIPPED": before["SUCCESS"], "SUCCESS": CRASH_TASKS - before["SUCCESS"]}
    assert check_files(directory) == {"SUCCESS": CRASH_TASKS}
    frame = read_status(directory)
    assert len(frame) == CRASH_TASKS
    assert frame.attrs["errors"] == []
    assert status_summary(directory).loc["SUCCESS", "scrape"] == CRASH_TASKS


def test_stale_temp_files_of_dead_writers_are_swept(tmp_path: Path) -> None:
    """A killed writer's `.name.<pid>.<n>.tmp` goes; a live writer's stays; real files stay."""
    from scrapeflow_dagster.engine.state.atomic import sweep_stale_temp_files

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead_pid = int(dead.stdout)
    (tmp_path / f".k.status.json.{dead_pid}.0.tmp").write_bytes(b"partial")
    (tmp_path / f".k.scrape.{os.getpid()}.3.tmp").write_bytes(b"in flight")
    (tmp_path / "k.status.json").write_bytes(b"{}")

    assert sweep_stale_temp_files(tmp_path) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f".k.scrape.{os.getpid()}.3.tmp", "k.status.json"]
    )
