"""Per-host limits hold across machines through Redis: two engine processes that share no data
folder (as two worker hosts share no lock files) and the real Redis; with the shared limits a
host sees at most `max_per_host` requests in flight from both, and their starts spaced by the
delay from both; without them (the control), each machine keeps its own limit. A slot is a
lease that its holder renews while it lives: held as long as needed, back within a lease once
the holder is killed."""

import asyncio
import json
import signal
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

from scrapeflow_dagster.site.server import SiteThread

MACHINE = textwrap.dedent(
    """
    import asyncio, json, sys, time
    from pathlib import Path
    from scrapeflow_dagster.engine.executor import execute_async
    from scrapeflow_dagster.engine.executors.scrape import scrape
    from scrapeflow_dagster.engine.settings import PoliteSettings, ScrapeSettings

    base, folder, shared, name, start_at, count, path, limit, delay = sys.argv[1:10]
    polite = PoliteSettings(
        max_per_host=int(limit), per_host_delay_seconds=float(delay),
        shared_limits_url=shared or None,
    )
    tasks = {f"{name}{n}": {"url": f"{base}{path}?n={name}{n}"} for n in range(int(count))}
    time.sleep(max(0.0, float(start_at) - time.time()))  # both machines start together
    began = time.time()
    done = asyncio.run(
        execute_async([scrape], Path(folder), tasks, settings=ScrapeSettings(polite=polite))
    )
    print(json.dumps({"done": len(done), "began": began, "ended": time.time()}))
    """
)


def two_machines(
    site: SiteThread, tmp_path: Path, shared: str, *, count: int, path: str, limit: int,
    delay: float,
) -> list[dict]:  # fmt: skip
    start_at = time.time() + 3.0  # after both interpreters have imported the engine
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                MACHINE,
                site.base_url,
                str(tmp_path / name),
                shared,
                name,
                str(start_at),
                str(count),
                path,
                str(limit),
                str(delay),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for name in ("a", "b")
    ]
    return [json.loads(proc.communicate(timeout=120)[0]) for proc in procs]


def seen(site: SiteThread) -> dict:
    with urllib.request.urlopen(site.url("/control/requests"), timeout=10) as response:
        return json.load(response)


@pytest.mark.parametrize("across_machines", [True, False], ids=["shared", "control"])
def test_two_machines_share_a_hosts_slots_through_redis(
    across_machines: bool, redis_broker: str, tmp_path: Path
) -> None:
    with SiteThread(pages=1) as site:
        results = two_machines(
            site, tmp_path, redis_broker if across_machines else "",
            count=12, path="/slow/0.3", limit=2, delay=0.0,
        )  # fmt: skip
        most = seen(site)["max_in_flight"][site.base_url.removeprefix("http://")]
    assert [r["done"] for r in results] == [12, 12]
    assert most == (2 if across_machines else 4)


def test_two_machines_space_their_starts_by_the_hosts_delay(
    redis_broker: str, tmp_path: Path
) -> None:
    with SiteThread(pages=20) as site:
        results = two_machines(
            site, tmp_path, redis_broker, count=4, path="/page/1", limit=8, delay=0.3
        )
    # Eight starts from both machines, 0.3 s apart: at least 7 gaps (each machine alone: 3).
    span = max(r["ended"] for r in results) - min(r["began"] for r in results)
    assert [r["done"] for r in results] == [4, 4]
    assert span >= 7 * 0.3


HOLDER = textwrap.dedent(
    """
    import asyncio, sys
    from scrapeflow_dagster.engine.polite.shared import SharedHostLimits

    async def main():
        limits = SharedHostLimits(sys.argv[1], lease_seconds=float(sys.argv[2]))
        assert await limits.try_take("site:80", 1) is not None
        print("taken", flush=True)
        await asyncio.sleep(3600)  # holding the slot (renewing it) until killed

    asyncio.run(main())
    """
)


async def test_a_slot_held_longer_than_its_lease_stays_held(redis_broker: str) -> None:
    from scrapeflow_dagster.engine.polite.shared import SharedHostLimits

    holder, other = (SharedHostLimits(redis_broker, lease_seconds=1.5) for _ in range(2))
    try:
        token = await holder.try_take("site:80", 1)
        assert token is not None
        await asyncio.sleep(4.5)  # three leases long: renewed, never run out
        assert await other.try_take("site:80", 1) is None
        await holder.give_back("site:80", token)
        assert await other.try_take("site:80", 1) is not None
    finally:
        await holder.close()
        await other.close()


async def test_the_slot_of_a_killed_process_comes_back_within_its_lease(
    redis_broker: str,
) -> None:
    from scrapeflow_dagster.engine.polite.shared import SharedHostLimits

    lease = 3.0
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, redis_broker, str(lease)], stdout=subprocess.PIPE, text=True
    )
    other = SharedHostLimits(redis_broker, lease_seconds=lease)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "taken"
        await asyncio.sleep(lease * 1.5)  # renewed by the live holder past its first lease
        assert await other.try_take("site:80", 1) is None
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        killed_at = time.monotonic()
        while await other.try_take("site:80", 1) is None:
            assert time.monotonic() - killed_at < lease + 1.0, "the dead holder's slot stayed"
            await asyncio.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        await other.close()
