"""Task locks: per key inside a process, per stripe across processes."""

import asyncio
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.state import byte_locks
from scrapeflow_dagster.engine.state.locks import TaskLocks


async def test_same_key_is_serialised(tmp_path: Path) -> None:
    locks = TaskLocks(tmp_path)
    inside = 0
    most = 0

    async def use() -> None:
        nonlocal inside, most
        async with locks.hold("k"):
            inside += 1
            most = max(most, inside)
            await asyncio.sleep(0.01)
            inside -= 1

    await asyncio.gather(*(use() for _ in range(5)))
    assert most == 1
    assert locks.held_keys == []  # idle locks are dropped


async def test_keys_sharing_a_stripe_do_not_wait_for_each_other(tmp_path: Path) -> None:
    locks = TaskLocks(tmp_path, stripes=1)  # every key on the same stripe
    entered = asyncio.Event()

    async def slow() -> None:
        async with locks.hold("a"):
            entered.set()
            await asyncio.sleep(0.5)

    task = asyncio.create_task(slow())
    await entered.wait()
    started = time.monotonic()
    async with locks.hold("b"):
        waited = time.monotonic() - started
    await task
    assert waited < 0.2


@pytest.mark.parametrize("byte", [True, False], ids=["byte-locks", "stripe-files"])
async def test_another_process_holding_the_key_blocks_until_it_lets_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, byte: bool
) -> None:
    # Without open-file-description locks (not Linux), each stripe is a file of its own.
    if not byte:
        monkeypatch.setattr(byte_locks, "OFD_SETLK", None)
    holder = textwrap.dedent(
        f"""
        import asyncio, sys, time
        from scrapeflow_dagster.engine.state import byte_locks
        from scrapeflow_dagster.engine.state.locks import TaskLocks
        if not {byte!r}:
            byte_locks.OFD_SETLK = None
        async def main():
            async with TaskLocks({str(tmp_path)!r}).hold("shared"):
                print("held", flush=True)
                time.sleep(1.0)
        asyncio.run(main())
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        started = time.monotonic()
        locks = TaskLocks(tmp_path)
        async with locks.hold("shared"):
            waited = time.monotonic() - started
        assert waited > 0.5
        async with locks.hold("another key"), locks.hold("and a third"):
            pass
        locks.close()
    finally:
        proc.wait(timeout=10)
    made = sorted(path.name for path in (tmp_path / ".locks").iterdir())
    if byte:
        assert made == ["stripes.lock"]  # one file, whatever the keys
    else:
        assert len(made) == 3 and all(name.endswith(".lock") for name in made)


async def test_a_waiter_cancelled_while_waiting_leaves_the_key_usable(tmp_path: Path) -> None:
    locks = TaskLocks(tmp_path)
    order: list[str] = []

    async def use(name: str, seconds: float) -> None:
        async with locks.hold("k"):
            order.append(name)
            await asyncio.sleep(seconds)

    first = asyncio.create_task(use("first", 0.1))
    await asyncio.sleep(0)
    doomed = asyncio.create_task(use("doomed", 0))
    last = asyncio.create_task(use("last", 0))
    await asyncio.sleep(0.01)
    doomed.cancel()
    await asyncio.gather(first, last)
    assert doomed.cancelled()
    assert order == ["first", "last"]
    assert locks.held_keys == []


async def test_a_waiter_cancelled_just_as_the_key_is_handed_over_passes_it_on(
    tmp_path: Path,
) -> None:
    locks = TaskLocks(tmp_path)
    assert locks.try_acquire("k")
    doomed = asyncio.create_task(locks.acquire("k"))
    after = asyncio.create_task(locks.acquire("k"))
    await asyncio.sleep(0)  # both now wait, in that order
    locks.release("k")  # hands the key to `doomed`...
    doomed.cancel()  # ...which is cancelled before it runs again
    with pytest.raises(asyncio.CancelledError):
        await doomed
    await asyncio.wait_for(after, 1)  # the key went on to the next waiter
    locks.release("k")
    assert locks.held_keys == []
    locks.close()


async def test_try_acquire_refuses_a_held_key(tmp_path: Path) -> None:
    locks = TaskLocks(tmp_path)
    assert locks.try_acquire("k")
    assert not locks.try_acquire("k")
    assert locks.try_acquire("other")
    locks.release("k")
    locks.release("other")
    assert locks.try_acquire("k")
    locks.release("k")
    locks.close()
