"""Step deadlines: one periodic timer bounding many steps, with asyncio.timeout's semantics."""

import asyncio
import time

import pytest

from scrapeflow_dagster.engine.run.deadlines import StepDeadlines


async def test_a_step_past_its_deadline_raises_timeout_error_soon_after() -> None:
    deadlines = StepDeadlines(0.2)
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        with deadlines.bound():
            await asyncio.sleep(5)
    waited = time.monotonic() - started
    deadlines.close()
    assert 0.2 <= waited < 0.2 + 0.2  # at most one tick (seconds / 20) late, plus slack


async def test_the_task_goes_on_normally_after_a_timeout() -> None:
    deadlines = StepDeadlines(0.05)
    with pytest.raises(TimeoutError):
        with deadlines.bound():
            await asyncio.sleep(5)
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0  # the cancel was ours, and taken back
    await asyncio.sleep(0.01)  # would raise CancelledError if a cancel were left pending
    with deadlines.bound():
        await asyncio.sleep(0.01)
    deadlines.close()


async def test_many_concurrent_steps_each_get_their_own_deadline() -> None:
    deadlines = StepDeadlines(0.3)

    async def step(seconds: float) -> str:
        try:
            with deadlines.bound():
                await asyncio.sleep(seconds)
        except TimeoutError:
            return "timeout"
        return "done"

    results = await asyncio.gather(*(step(0.01 if i % 2 else 5) for i in range(50)))
    deadlines.close()
    assert results.count("done") == 25 and results.count("timeout") == 25


async def test_a_cancel_from_outside_stays_a_cancel() -> None:
    deadlines = StepDeadlines(5)
    entered = asyncio.Event()

    async def step() -> None:
        with deadlines.bound():
            entered.set()
            await asyncio.sleep(5)

    task = asyncio.create_task(step())
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    deadlines.close()


async def test_a_step_that_ends_in_time_is_not_touched_and_the_timer_stops() -> None:
    deadlines = StepDeadlines(0.1)
    with deadlines.bound():
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.2)  # past the deadline: nothing may be cancelled now
    assert deadlines._timer is None  # no step running: the timer is not re-armed
    deadlines.close()


async def test_nesting_in_one_task_is_refused() -> None:
    deadlines = StepDeadlines(1)
    with deadlines.bound():
        with pytest.raises(RuntimeError, match="do not nest"):
            with deadlines.bound():
                pass
    deadlines.close()
