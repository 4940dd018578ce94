"""Step time limits for many concurrent tasks, checked by one periodic timer.

`asyncio.timeout()` arms one timer handle per use: a heap push, a cancel and an async context
manager for every step of every task. A run bounds every step by the same number of seconds,
so one timer that wakes a few times per second and cancels the steps past their deadline does
the same job for a dict insert and delete per step. A step may overrun its limit by up to one
tick (`seconds / 20`, at most 1 s); expiry behaves like `asyncio.timeout`: the step's task is
cancelled and `TimeoutError` comes out of the `with` block.
"""

import asyncio
import math
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

_MAX_TICK_SECONDS = 1.0
_MIN_TICK_SECONDS = 0.005


class StepDeadlines:
    """Bounds `with deadlines.bound():` blocks to `seconds` each; create it inside the loop."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._tick = min(_MAX_TICK_SECONDS, max(_MIN_TICK_SECONDS, seconds / 20))
        self._loop = asyncio.get_running_loop()
        self._running: dict[asyncio.Task[object], _Bound] = {}
        self._timer: asyncio.TimerHandle | None = None

    def bound(self) -> "_Bound":
        """A `with` block that must end within `seconds` (the current task is cancelled if not).

        Raises:
            RuntimeError: outside a task, or nested in another bound of the same task.
        """
        return _Bound(self)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Stop the current task's deadline inside this block and push it back by the time spent
        there (waiting for a host's turn is not the step being slow); a no-op outside a bound."""
        task = asyncio.current_task()
        bound = self._running.get(task) if task is not None else None
        if bound is None:
            yield
            return
        began, deadline = self._loop.time(), bound.deadline
        bound.deadline = math.inf
        try:
            yield
        finally:
            bound.deadline = deadline + (self._loop.time() - began)

    def _check(self) -> None:
        self._timer = None
        now = self._loop.time()
        for task, bound in list(self._running.items()):
            if not bound.expired and now >= bound.deadline:
                bound.expired = True
                task.cancel()
        if self._running:
            self._arm()

    def _arm(self) -> None:
        if self._timer is None:
            self._timer = self._loop.call_later(self._tick, self._check)

    def close(self) -> None:
        """Stop the timer (blocks still open are no longer bounded)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._running.clear()


class _Bound:
    __slots__ = ("_cancelling", "_deadlines", "_task", "deadline", "expired")

    def __init__(self, deadlines: StepDeadlines) -> None:
        self._deadlines = deadlines
        self.expired = False

    def __enter__(self) -> None:
        task = asyncio.current_task()
        deadlines = self._deadlines
        if task is None:
            raise RuntimeError("a step deadline needs a running task")
        if task in deadlines._running:
            raise RuntimeError("step deadlines do not nest within one task")
        self._task = task
        # Cancellations already requested are not ours to turn into TimeoutError.
        self._cancelling = task.cancelling()
        self.deadline = deadlines._loop.time() + deadlines.seconds
        deadlines._running[task] = self
        deadlines._arm()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._deadlines._running.pop(self._task, None)
        # As asyncio.timeout: only our own cancellation becomes a TimeoutError.
        if (
            self.expired
            and self._task.uncancel() <= self._cancelling
            and exc_type is asyncio.CancelledError
        ):
            raise TimeoutError from exc
