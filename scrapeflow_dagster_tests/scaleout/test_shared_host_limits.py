"""Per-host limits hold across machines through Redis: two engine processes that share no data
folder (as two worker hosts share no lock files) and the real Redis; with the shared limits a
host sees at most `max_per_host` requests in flight from both, and their starts spaced by the
delay from both; without them (the control), each machine keeps its own limit."""

import json
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
