"""`TaskFeed`: the tasks of one pass, which may grow while the pass runs.

A crawl streamed through one run gives every task whose chain finished to a `grow` function
(the crawl's discovery), in batches, in a worker thread so fetching goes on meanwhile; the
tasks it returns join the same pass. The pass ends when no task is left, none is in flight and
no discovery is running or waiting: the last page parsed could still add tasks.

A discovery waits while the queue is long (`low_water`). It runs in a thread, but it is Python
work: it takes the GIL from the event loop, and every time the loop gives the GIL up for a
system call (a status file, a socket) the thread keeps it for up to a switch interval (5 ms).
Discovering as soon as pages finish kept the thread busy through the whole of the bench's
crawl, whose tasks were all known a tenth of a second in; waiting until the queue ran low
made the crawl 6% faster (2026-11-27, 2 cores: 3.03 s -> 2.85 s, 6 alternated rounds). It
also starts once as many finished tasks wait for it as the pass has workers (`max_waiting`), so
no single discovery grows so large that the workers drain the queue while it runs (2.90 s
against 3.00 s without that bound, 6 alternated rounds: no cost). While the queue is short it
discovers as before, as soon as tasks finish.
"""

import asyncio
from collections import deque
from collections.abc import Callable, Iterator

from scrapeflow_dagster.engine.state.schema import Params

# Given the keys whose chain succeeded or was skipped since its last call; returns the keys of
# new tasks (stored already, their params in their status files) to run in the same pass.
Grow = Callable[[list[str]], list[str]]


class TaskFeed:
    """Hands the pass's workers their tasks: first `pairs`, then what `grow` adds."""

    def __init__(
        self,
        pairs: Iterator[tuple[str, Params | None]],
        grow: Grow | None,
        *,
        low_water: int = 0,
        max_waiting: int = 1,
    ) -> None:
        """Args:
        pairs: the pass's first tasks, `(key, params)`.
        grow: the discovery (None: the pass runs `pairs` only).
        low_water: discovery starts while the queue of tasks it added holds at most this
            many (see the module)...
        max_waiting: ...or once this many finished tasks wait for it, so that one
            discovery never takes in more than a batch of about this size.
        """
        self._pairs = pairs
        self._grow = grow
        self._low_water = low_water
        self._max_waiting = max_waiting
        self._queue: deque[str] = deque()
        self._seen: set[str] = set()
        self._in_flight = 0
        self._finished: list[str] = []  # not given to `grow` yet
        self._growing: asyncio.Future[list[str]] | None = None
        self._changed = asyncio.Event()
        self._error: BaseException | None = None
        self._exhausted = False

    async def next(self) -> tuple[str, Params | None] | None:
        """The next task to run, waiting for a discovery while one can still add tasks; None
        when the pass is done.

        Raises:
            Exception: what `grow` raised (the pass stops as for an executor's bug).
        """
        while True:
            if self._error is not None:
                raise self._error
            if self._queue:
                self._in_flight += 1
                key = self._queue.popleft()
                self._start_growing()  # the queue may be short enough now
                return key, None
            if not self._exhausted:
                for key, params in self._pairs:
                    if self._grow is not None:
                        if key in self._seen:
                            continue
                        self._seen.add(key)
                    self._in_flight += 1
                    return key, params
                self._exhausted = True
            if self._grow is None or (
                self._in_flight == 0 and self._growing is None and not self._finished
            ):
                return None
            self._changed.clear()
            await self._changed.wait()

    def finished(self, key: str, *, succeeded: bool) -> None:
        """Note that the task `key` from `next` ended; a succeeded one goes to `grow`."""
        self._in_flight -= 1
        if succeeded and self._grow is not None:
            self._finished.append(key)
            self._start_growing()
        self._changed.set()

    def _start_growing(self) -> None:
        if (
            self._grow is None
            or self._growing is not None
            or not self._finished
            or (len(self._queue) > self._low_water and len(self._finished) < self._max_waiting)
            or self._error is not None  # the pass is stopping: nothing more is taken in
        ):
            return
        parents, self._finished = self._finished, []
        self._growing = asyncio.ensure_future(asyncio.to_thread(self._grow, parents))
        self._growing.add_done_callback(self._grown)

    def _grown(self, done: "asyncio.Future[list[str]]") -> None:
        self._growing = None
        if done.cancelled():
            return
        error = done.exception()
        if error is not None:
            self._error = error
        else:
            for key in done.result():
                if key not in self._seen:
                    self._seen.add(key)
                    self._queue.append(key)
            self._start_growing()
        self._changed.set()
