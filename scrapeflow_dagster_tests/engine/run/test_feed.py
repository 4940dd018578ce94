"""`execute_async(grow=...)`: tasks that finished are handed on to `grow` in batches, the tasks
it returns run in the same pass, and the pass ends only when nothing is left, none is in flight
and no discovery is running (a crawl streamed through one run)."""

import asyncio
import threading
from collections import Counter
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.executor import Context, execute_async, taskify
from scrapeflow_dagster.engine.run.feed import TaskFeed
from scrapeflow_dagster.engine.state.files import create_status
from scrapeflow_dagster.engine.state.schema import new_status
from scrapeflow_dagster.engine.status import StatusData


def tree(depth: int) -> dict[str, list[str]]:
    """A page tree: each page below `depth` links to two children (one of them failing at
    depth 1) and back to its parent (already known)."""
    children: dict[str, list[str]] = {}
    level = ["p"]
    for _ in range(depth):
        nxt = []
        for page in level:
            kids = [f"{page}-0", f"{page}-1"]
            children[page] = [*kids, page]
            nxt += kids
        level = nxt
    children["p-1"].append("p-1-bad")
    return children


async def test_the_tasks_grow_adds_run_in_the_same_pass_and_the_pass_waits_for_them(
    tmp_path: Path,
) -> None:
    links = tree(4)
    calls: list[list[str]] = []
    threads: set[str] = set()

    def grow(finished: list[str]) -> list[str]:
        calls.append(list(finished))
        threads.add(threading.current_thread().name)
        found = [child for key in finished for child in links.get(key, [])]
        for child in found:  # stored as a discovery stores them; known ones stay as they are
            create_status(tmp_path, child, new_status(child, {"depth": child.count("-")}))
        return found

    ran: Counter[str] = Counter()

    @taskify
    async def fetch(context: Context, key: str, status: StatusData) -> dict[str, int]:
        ran[key] += 1
        if key.endswith("-bad"):
            raise RuntimeError("HTTP 404")  # a recognised failure: recorded, chain stops
        return {"n": 1}

    done = await execute_async([fetch], tmp_path, {"p": {}}, max_parallelism=3, grow=grow)

    expected = {"p", *(child for kids in links.values() for child in kids)}
    assert set(ran) == expected and set(ran.values()) == {1}  # each once, parents not again
    assert set(done) == expected - {"p-1-bad"}
    # Only tasks that succeeded were handed on, each once, from a thread of their own.
    handed = [key for batch in calls for key in batch]
    assert sorted(handed) == sorted(done)
    assert threading.main_thread().name not in threads


async def test_an_error_of_grow_stops_the_pass_and_is_raised(tmp_path: Path) -> None:
    def grow(finished: list[str]) -> list[str]:
        raise OSError("frontier folder gone")

    @taskify
    async def fetch(context: Context, key: str, status: StatusData) -> dict[str, int]:
        return {"n": 1}

    with pytest.raises(OSError, match="frontier folder gone"):
        await execute_async([fetch], tmp_path, {"a": {}, "b": {}}, grow=grow)


def seed_feed(children: int, **limits: int) -> tuple[TaskFeed, list[list[str]]]:
    """A feed whose seed's discovery adds `children` tasks `c0`, `c1`, ... (later discoveries
    add none), and the batches its discovery was handed."""
    calls: list[list[str]] = []

    def grow(finished: list[str]) -> list[str]:
        calls.append(list(finished))
        return [f"c{n}" for n in range(children)] if finished == ["seed"] else []

    return TaskFeed(iter([("seed", {})]), grow, **limits), calls


async def take_and_finish(feed: TaskFeed, count: int) -> list[str]:
    """Take `count` tasks from `feed`, each finished (succeeded) at once; their keys."""
    taken = []
    for _ in range(count):
        task = await feed.next()
        assert task is not None
        taken.append(task[0])
        feed.finished(task[0], succeeded=True)
    return taken


async def test_discovery_waits_while_the_queue_is_long_and_hands_on_every_task_once() -> None:
    feed, calls = seed_feed(10, low_water=3, max_waiting=100)
    await take_and_finish(feed, 1)  # the seed
    taken = await take_and_finish(feed, 6)  # c0..c5: the queue goes from 9 down to 4
    assert calls == [["seed"]]  # nothing discovered while more than 3 were queued
    rest = []
    while (task := await feed.next()) is not None:
        rest.append(task[0])
        feed.finished(task[0], succeeded=True)
    assert taken + rest == [f"c{n}" for n in range(10)]
    handed = [key for batch in calls[1:] for key in batch]
    assert sorted(handed) == sorted(taken + rest)  # each finished task handed on once
    assert calls[1] == taken  # the first batch after the wait: everything finished meanwhile


async def test_discovery_starts_once_a_batch_of_finished_tasks_waits_however_long_the_queue() -> (
    None
):
    feed, calls = seed_feed(30, low_water=3, max_waiting=4)
    await take_and_finish(feed, 1)  # the seed
    await take_and_finish(feed, 4)
    await feed.next()  # waits for nothing: 25 are queued; the discovery runs meanwhile
    for _ in range(500):  # up to 5 s
        if len(calls) >= 2:
            break
        await asyncio.sleep(0.01)
    assert calls[1:2] == [["c0", "c1", "c2", "c3"]]
    assert calls[1] == ["c0", "c1", "c2", "c3"]  # 26 still queued, far above the low water
