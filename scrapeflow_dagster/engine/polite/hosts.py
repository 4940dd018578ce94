"""Per-host limits that hold inside a run and across processes sharing one data folder.

A host (`host:port`, as the server sees its Host header) has `limit` slots. Inside a process, a
counter with a FIFO of waiters hands them out, so the common case (a free slot) never suspends.
Across processes, each slot is a lock held for the duration of one request, which the kernel
drops when its holder dies (SIGKILL included), so a killed run never keeps a slot; a process
that finds every slot taken polls until one frees. On Linux a slot is one byte of the single
file `<directory>/slots.lock`, locked with an open-file-description lock (one `fcntl` call, no
file per host: a crawl over a million hosts creates no million files); a host's bytes are
picked by a hash of its name, so two hosts may share slots (never more requests, at worst
fewer). Elsewhere each slot is its own file `<directory>/<host>/<i>.lock` taken with `flock`.

With `across_machines` (Redis, `polite.shared`), the slots and the delay hold across machines
instead: a slot is a lease in Redis, the next start is booked there; inside a process the same
counter and FIFO come first.

A delay between request starts at one host (the larger of the configured delay and robots.txt's
`Crawl-delay`) is kept in `<directory>/<host>/next-start`: under a short `flock`, a request
reads when the next may start, books that time plus the delay for the one after it, and sleeps
until its own turn. Without a delay that file is never touched.
"""

import asyncio
import contextlib
import fcntl
import os
import re
import time
import zlib
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from scrapeflow_dagster.engine.polite.shared import SharedLimitsDown
from scrapeflow_dagster.engine.state import byte_locks

if TYPE_CHECKING:
    from scrapeflow_dagster.engine.polite.shared import SharedHostLimits

_POLL_SECONDS = 0.01
_UNSAFE = re.compile(r"[^A-Za-z0-9.-]")
_STAMP_BYTES = 32
_STRIPES = 1 << 20  # hash buckets for host names: collisions are rare among active hosts
MAX_SLOTS = 1024  # bytes per bucket, so the most slots a host can have


WaitGuard = Callable[[], AbstractContextManager[object]]


def _no_guard() -> AbstractContextManager[object]:
    return contextlib.nullcontext()


class _Gate:
    """This process's share of one host: slots in use, slot files held, coroutines waiting."""

    __slots__ = ("held", "in_use", "waiters")

    def __init__(self) -> None:
        self.in_use = 0
        self.held: set[int] = set()
        self.waiters: deque[asyncio.Future[None]] = deque()


class Slot:
    """One request's hold on a host: release it with `HostSlots.release` (exactly once).

    `index` is the locked byte's offset (Linux) or the slot number; `fd` the slot file's
    descriptor (-1: nothing held, no limit).
    """

    __slots__ = ("fd", "host", "index", "token")

    def __init__(self, host: str, index: int, fd: int, token: str | None = None) -> None:
        self.host = host
        self.index = index
        self.fd = fd
        self.token = token  # the Redis lease, for limits shared across machines


class HostSlots:
    """At most `limit` requests in flight per host (0: no limit), `delay` apart, across processes.

    `wait_guard` wraps every wait (a full host, a delay): the run uses it to stop a step's
    time limit from counting time spent waiting for politeness.
    """

    def __init__(
        self,
        directory: Path,
        *,
        limit: int,
        wait_guard: WaitGuard | None = None,
        across_machines: "SharedHostLimits | None" = None,
    ):
        if limit > MAX_SLOTS:
            raise ValueError(f"max_per_host must be at most {MAX_SLOTS}, got {limit}")
        self._dir = os.fspath(directory)
        self._limit = limit
        self._gates: dict[str, _Gate] = {}
        self._made: set[str] = set()
        self._wait_guard = wait_guard or _no_guard
        self._shared_fd: int | None = None  # `slots.lock`, opened on first use (Linux)
        self._held_bytes: set[int] = set()  # bytes of `slots.lock` this process holds
        self._across_machines = across_machines
        self._returning: set[asyncio.Task[None]] = set()  # leases being given back

    def close(self) -> None:
        """Close `slots.lock` (dropping any slot still held); call once the run is over."""
        if self._shared_fd is not None:
            os.close(self._shared_fd)
            self._shared_fd = None
            self._held_bytes.clear()

    async def aclose(self) -> None:
        """`close`, after the leases being given back to Redis are (then its connections)."""
        self.close()
        if self._across_machines is not None:
            if self._returning:
                await asyncio.gather(*self._returning, return_exceptions=True)
            await self._across_machines.close()

    def _host_dir(self, host: str) -> str:
        path = os.path.join(self._dir, _UNSAFE.sub("_", host))
        if path not in self._made:
            os.makedirs(path, exist_ok=True)
            self._made.add(path)
        return path

    def try_acquire(self, host: str) -> Slot | None:
        """A slot at `host` when one is free now in this process and across processes, without
        suspending; None when the caller must `await acquire(host)` instead."""
        if not self._limit:
            return Slot(host, -1, -1)
        if self._across_machines is not None:
            return None  # a lease needs a round trip to Redis: `acquire`
        gate = self._gates.get(host)
        if gate is None:
            gate = self._gates[host] = _Gate()
        elif gate.in_use >= self._limit or gate.waiters:
            return None
        slot = self._try_file(host, gate)
        if slot is not None:
            gate.in_use += 1
        elif not gate.in_use:
            del self._gates[host]
        return slot

    async def acquire(self, host: str, *, delay_seconds: float = 0.0) -> Slot:
        """Wait for a slot at `host` and for its turn after `delay_seconds` since the last start.

        Raises:
            OSError: when the slot folder cannot be created or opened.
        """
        slot = self.try_acquire(host) if self._limit else None
        if slot is None:
            with self._wait_guard():
                slot = await self._wait_for_slot(host) if self._limit else Slot(host, -1, -1)
        if delay_seconds > 0:
            try:
                wait = await self._book_anywhere(host, delay_seconds)
                if wait > 0:
                    with self._wait_guard():
                        await asyncio.sleep(wait)
            except BaseException:
                self.release(slot)
                raise
        return slot

    async def _wait_for_slot(self, host: str) -> Slot:
        gate = self._gates.get(host)
        if gate is None:
            gate = self._gates[host] = _Gate()
        if gate.in_use >= self._limit or gate.waiters:
            waiter = asyncio.get_running_loop().create_future()
            gate.waiters.append(waiter)
            try:
                await waiter  # `release` hands its count over: in_use stays as it was
            except BaseException:
                if waiter.done() and not waiter.cancelled():
                    self._hand_over(host, gate)  # handed over, then cancelled: pass it on
                else:
                    with contextlib.suppress(ValueError):  # skipped and dropped by a release
                        gate.waiters.remove(waiter)
                raise
        else:
            gate.in_use += 1
        try:
            while (slot := await self._try_anywhere(host, gate)) is None:
                await asyncio.sleep(_POLL_SECONDS)  # every slot held by other processes
        except BaseException:
            self._hand_over(host, gate)
            raise
        return slot

    async def _try_anywhere(self, host: str, gate: _Gate) -> Slot | None:
        """A slot held across processes (a Redis lease, or a lock file here while Redis is
        away or unused), None when every one is taken elsewhere."""
        if self._across_machines is not None:
            try:
                token = await self._across_machines.try_take(host, self._limit)
                return Slot(host, -1, -2, token) if token is not None else None
            except SharedLimitsDown:
                pass  # this machine's limit meanwhile
        return self._try_file(host, gate)

    async def _book_anywhere(self, host: str, delay_seconds: float) -> float:
        """Book this request's start at `host` (in Redis, or here while Redis is away)."""
        if self._across_machines is not None:
            try:
                return await self._across_machines.book(host, delay_seconds)
            except SharedLimitsDown:
                pass
        return self._book_start(host, delay_seconds)

    def _try_file(self, host: str, gate: _Gate) -> Slot | None:
        if byte_locks.OFD_SETLK is not None:
            return self._try_byte(host)
        folder = self._host_dir(host)
        for index in range(self._limit):
            if index in gate.held:
                continue
            fd = os.open(f"{folder}/{index}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # another process's request holds this slot
                os.close(fd)
                continue
            gate.held.add(index)
            return Slot(host, index, fd)
        return None

    def _try_byte(self, host: str) -> Slot | None:
        fd = self._shared_fd
        if fd is None:
            os.makedirs(self._dir, exist_ok=True)
            path = os.path.join(self._dir, "slots.lock")
            fd = self._shared_fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        # crc32 is stable across processes (unlike hash()) and cheap.
        base = (zlib.crc32(host.encode()) % _STRIPES) * MAX_SLOTS
        held = self._held_bytes
        for offset in range(base, base + self._limit):
            # One open is shared by the whole process, so its own locks never conflict with
            # each other: the bytes it holds are skipped here instead.
            if offset not in held and byte_locks.lock_byte(fd, offset):
                held.add(offset)
                return Slot(host, offset, fd)
        return None

    def release(self, slot: Slot) -> None:
        """Give the slot back: the next waiter of this process (if any) gets its turn."""
        if slot.token is not None and self._across_machines is not None:
            # Given back in the background (release is called from `finally` blocks); the
            # lease runs out anyway if that fails.
            task = asyncio.get_running_loop().create_task(
                self._across_machines.give_back(slot.host, slot.token)
            )
            self._returning.add(task)
            task.add_done_callback(self._returning.discard)
        elif slot.fd < 0:
            return
        elif slot.fd == self._shared_fd:
            byte_locks.unlock_byte(slot.fd, slot.index)
            self._held_bytes.discard(slot.index)
        else:
            os.close(slot.fd)  # closing drops the flock
        gate = self._gates[slot.host]
        gate.held.discard(slot.index)
        self._hand_over(slot.host, gate)

    def _hand_over(self, host: str, gate: _Gate) -> None:
        while gate.waiters:
            waiter = gate.waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        gate.in_use -= 1
        if not gate.in_use:
            del self._gates[host]  # a million hosts seen once leave nothing behind

    def _book_start(self, host: str, delay_seconds: float) -> float:
        """Book this request's start at `host`; returns how long to sleep until then."""
        path = f"{self._host_dir(host)}/next-start"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            # Held only for a read and a write: blocking here is shorter than any poll.
            fcntl.flock(fd, fcntl.LOCK_EX)
            raw = os.pread(fd, _STAMP_BYTES, 0).strip()
            try:
                booked = float(raw) if raw else 0.0
            except ValueError:  # a torn or foreign file: start now
                booked = 0.0
            now = time.time()  # wall clock: shared by every process on the machine
            start = max(now, booked)
            os.pwrite(fd, f"{start + delay_seconds:.6f}".ljust(_STAMP_BYTES).encode(), 0)
        finally:
            os.close(fd)
        return start - now
