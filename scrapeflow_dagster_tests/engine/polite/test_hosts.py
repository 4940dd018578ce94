"""Per-host concurrency, measured at the bundled site: the limit holds inside a run and across
processes sharing a data folder, is reached when there is enough work, and a killed process
gives its slots back."""

import asyncio
import dataclasses
import os
import signal
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from scrapeflow_dagster.engine.executor import execute_async
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.polite import hosts
from scrapeflow_dagster.engine.polite.hosts import HostSlots
from scrapeflow_dagster.engine.run.execute import POLITE_DIR
from scrapeflow_dagster.engine.settings import PoliteSettings
from scrapeflow_dagster.engine.state import byte_locks
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.conftest import fast_settings
from scrapeflow_dagster_tests.support.paths import PYTHON, REPO_ROOT

CHILD = "scrapeflow_dagster_tests.engine.polite.engine_child"


async def requests_seen(site: LocalSite) -> dict[str, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(site.url("/control/requests")) as response,
    ):
        return dict(await response.json())


async def run(directory: Path, tasks: dict[str, dict[str, Any]], *, max_per_host: int) -> int:
    settings = dataclasses.replace(
        fast_settings(), polite=PoliteSettings(max_per_host=max_per_host)
    )
    done = await execute_async([scrape], directory, tasks, max_parallelism=40, settings=settings)
    return len(done)


def graph_tasks(site: LocalSite, prefix: str, nodes: range) -> dict[str, dict[str, Any]]:
    return {f"{prefix}{n}": {"url": site.url(f"/graph/{n}")} for n in nodes}


async def start_child(directory: Path, prefix: str, max_per_host: int, urls: list[str]) -> Any:
    return await asyncio.create_subprocess_exec(
        PYTHON,
        "-m",
        CHILD,
        str(directory),
        prefix,
        str(max_per_host),
        *urls,
        cwd=REPO_ROOT,
        stdout=asyncio.subprocess.PIPE,
    )


async def test_the_limit_holds_in_one_run_and_is_reached(tmp_path: Path) -> None:
    # Each page takes 0.5 s: far longer than sending 12 requests takes, so they all overlap.
    async with LocalSite(pages=1, graph_delay_seconds=0.5) as site:
        host = f"127.0.0.1:{site.port}"
        assert await run(tmp_path / "a", graph_tasks(site, "g", range(12)), max_per_host=3) == 12
        assert (await requests_seen(site))["max_in_flight"] == {host: 3}
        # The control: without a per-host limit the same run puts all 12 in flight at once.
        async with aiohttp.ClientSession() as session:
            await session.post(site.url("/control/requests/reset"))
        assert await run(tmp_path / "b", graph_tasks(site, "g", range(12)), max_per_host=0) == 12
        assert (await requests_seen(site))["max_in_flight"] == {host: 12}


async def two_processes(site: LocalSite, first: Path, second: Path) -> list[int]:
    """Two engine processes scraping 15 graph pages each, started together."""
    procs = [
        await start_child(directory, prefix, 3, [site.url(f"/graph/{n}") for n in nodes])
        for directory, prefix, nodes in ((first, "a", range(15)), (second, "b", range(15, 30)))
    ]
    outputs = [await proc.communicate() for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0]
    return [int(out.strip()) for out, _ in outputs]


async def test_the_limit_holds_across_processes_sharing_the_data_folder(tmp_path: Path) -> None:
    # Each page takes 0.5 s: 15 pages at 3 at a time keep each process busy for 2.5 s or more,
    # far longer than the two processes' start-up differs.
    async with LocalSite(pages=1, graph_delay_seconds=0.5) as site:
        host = f"127.0.0.1:{site.port}"
        assert await two_processes(site, tmp_path, tmp_path) == [15, 15]
        assert (await requests_seen(site))["max_in_flight"] == {host: 3}
        # The control: two data folders share nothing, so the two runs add up.
        async with aiohttp.ClientSession() as session:
            await session.post(site.url("/control/requests/reset"))
        assert await two_processes(site, tmp_path / "x", tmp_path / "y") == [15, 15]
        assert (await requests_seen(site))["max_in_flight"] == {host: 6}


async def test_a_killed_process_gives_its_slots_back(tmp_path: Path) -> None:
    async with LocalSite(pages=5, page_bytes=500, graph_delay_seconds=60) as site:
        host = f"127.0.0.1:{site.port}"
        urls = [site.url(f"/graph/{n}") for n in range(4)]
        child = await start_child(tmp_path, "k", 2, urls)
        try:
            for _ in range(600):  # until both of its slots are in use at the site
                if (await requests_seen(site))["in_flight"].get(host) == 2:
                    break
                await asyncio.sleep(0.05)
            slots = HostSlots(tmp_path / POLITE_DIR / "hosts", limit=2)
            assert slots.try_acquire(host) is None  # both held by the child process
        finally:
            os.kill(child.pid, signal.SIGKILL)
            await child.wait()
        assert child.returncode == -signal.SIGKILL
        # The kernel dropped the dead process's flocks: both slots are free again.
        taken = [slots.try_acquire(host), slots.try_acquire(host)]
        assert all(slot is not None for slot in taken)
        for slot in taken:
            assert slot is not None
            slots.release(slot)
        pages = {f"p{n}": {"url": site.url(f"/page/{n}")} for n in range(5)}
        assert await run(tmp_path, pages, max_per_host=2) == 5


@pytest.mark.parametrize("byte", [True, False], ids=["byte-locks", "slot-files"])
def test_two_holders_of_one_folder_share_the_slots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, byte: bool
) -> None:
    # Two HostSlots over one folder open their lock files separately, as two processes do.
    # Without open-file-description locks (not Linux), each slot is a file of its own.
    if not byte:
        monkeypatch.setattr(byte_locks, "OFD_SETLK", None)
    first, second = HostSlots(tmp_path, limit=2), HostSlots(tmp_path, limit=2)
    held = [first.try_acquire("a.example:80"), first.try_acquire("a.example:80")]
    assert all(slot is not None for slot in held)
    assert first.try_acquire("a.example:80") is None  # this holder's own limit
    assert second.try_acquire("a.example:80") is None  # both slots held by the other
    assert second.try_acquire("b.example:80") is not None  # another host has its own
    first.release(held.pop())  # type: ignore[arg-type]
    again = second.try_acquire("a.example:80")
    assert again is not None and second.try_acquire("a.example:80") is None
    first.close()
    second.close()
    assert (tmp_path / "slots.lock").exists() == byte
    assert (tmp_path / "a.example_80").is_dir() != byte


def test_more_slots_than_the_cap_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_per_host must be at most 1024"):
        HostSlots(tmp_path, limit=hosts.MAX_SLOTS + 1)
