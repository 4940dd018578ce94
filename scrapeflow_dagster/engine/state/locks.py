"""Per-task locks that hold across processes, so two runs never interleave on one task.

Across processes, locks are striped over a fixed number of stripes, not one lock per task: a
million tasks do not make a million lock files. On Linux a stripe is one byte of a single file,
`.locks/stripes.lock`, held with an open-file-description lock (`byte_locks`); elsewhere it is
a file of its own (`.locks/0042.lock`, flock). One file rather than 256: a new data folder's
first run made a file per stripe it met (~1 ms of kernel time each on some disks) and kept
each open. Inside one process, coroutines lock per key and share the process's hold on a
stripe, so two tasks of the same run never wait for each other just because their keys hash
to the same stripe.

Taking a free lock never suspends: it is one dict insert and, when the process does not hold
the stripe yet, one non-blocking lock call. This runs once per task, so the uncontended path is
kept free of coroutines, context-manager generators and per-call allocations.
"""

import asyncio
import fcntl
import os
import zlib
from collections import deque
from types import TracebackType

from scrapeflow_dagster.engine.state import byte_locks

STRIPES = 256  # without byte locks, a file each, kept open while a TaskLocks lives
STRIPES_FILE = "stripes.lock"
_POLL_SECONDS = 0.02


class TaskLocks:
    """Cross-process, coroutine-friendly locks keyed by task key, under `<directory>/.locks/`.

    Use `async with locks.hold(key):`, or `if not locks.try_acquire(key): await
    locks.acquire(key)` then `locks.release(key)` where a context manager per task costs too
    much. Waiters on one key are served first come, first served.
    """

    def __init__(self, directory: os.PathLike[str] | str, *, stripes: int = STRIPES) -> None:
        self._dir = os.path.join(os.fspath(directory), ".locks")
        os.makedirs(self._dir, exist_ok=True)
        self._stripes = stripes
        # A key is held while it is in this dict; the deque holds the coroutines waiting for it.
        self._held: dict[str, deque[asyncio.Future[None]]] = {}
        self._users: dict[int, int] = {}  # stripe -> keys of this process holding it
        self._fds: dict[int, int] = {}  # stripe -> its own file, without byte locks
        self._bytes = byte_locks.OFD_SETLK is not None
        self._shared_fd: int | None = None  # the stripes file, with byte locks

    def _stripe(self, key: str) -> int:
        # crc32 is stable across processes (unlike hash()) and cheap.
        return zlib.crc32(key.encode()) % self._stripes

    def _lock(self, stripe: int) -> bool:
        """Take `stripe` across processes without waiting; False when another holds it."""
        if self._bytes:
            fd = self._shared_fd
            if fd is None:
                path = os.path.join(self._dir, STRIPES_FILE)
                fd = self._shared_fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            return byte_locks.lock_byte(fd, stripe)
        try:
            fcntl.flock(self._fd(stripe), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another process holds it
            return False
        return True

    def _unlock(self, stripe: int) -> None:
        if self._bytes:
            assert self._shared_fd is not None
            byte_locks.unlock_byte(self._shared_fd, stripe)
        else:
            fcntl.flock(self._fds[stripe], fcntl.LOCK_UN)

    def _fd(self, stripe: int) -> int:
        fd = self._fds.get(stripe)
        if fd is None:
            path = os.path.join(self._dir, f"{stripe:04d}.lock")
            fd = self._fds[stripe] = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        return fd

    def _try_stripe(self, stripe: int) -> bool:
        users = self._users.get(stripe)
        if users:  # this process already holds the stripe: share it
            self._users[stripe] = users + 1
            return True
        if not self._lock(stripe):
            return False
        self._users[stripe] = 1
        return True

    def _drop_stripe(self, stripe: int) -> None:
        users = self._users[stripe] - 1
        if users:
            self._users[stripe] = users
        else:
            del self._users[stripe]
            self._unlock(stripe)

    def try_acquire(self, key: str) -> bool:
        """Take the lock of `key` if nobody holds it, without waiting; True when taken."""
        if key in self._held:
            return False
        if not self._try_stripe(self._stripe(key)):
            return False
        self._held[key] = deque()
        return True

    async def acquire(self, key: str) -> None:
        """Take the lock of `key`, waiting for this process's holder and then other processes'."""
        waiters = self._held.get(key)
        if waiters is None:
            self._held[key] = deque()
        else:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            waiters.append(future)
            try:
                await future  # `release` hands the key over by resolving the future
            except asyncio.CancelledError:
                if future.done() and not future.cancelled():
                    self._release_key(key)  # handed over just as we were cancelled: pass it on
                elif future in waiters:  # not already dropped by `_release_key`
                    waiters.remove(future)
                raise
        stripe = self._stripe(key)
        try:
            while not self._try_stripe(stripe):
                await asyncio.sleep(_POLL_SECONDS)
        except BaseException:
            self._release_key(key)
            raise

    def release(self, key: str) -> None:
        """Let go of `key`, taken by `try_acquire` or `acquire`."""
        self._drop_stripe(self._stripe(key))
        self._release_key(key)

    def _release_key(self, key: str) -> None:
        waiters = self._held[key]
        while waiters:
            future = waiters.popleft()
            if not future.done():
                future.set_result(None)  # the key stays held: it now belongs to that waiter
                return
        del self._held[key]

    def hold(self, key: str) -> "_Hold":
        """Hold the lock of `key` for the body of an `async with`."""
        return _Hold(self, key)

    @property
    def held_keys(self) -> list[str]:
        """Keys this process holds or waits for (for tests and debugging)."""
        return list(self._held)

    def close(self) -> None:
        """Close the lock files (releasing any lock still held)."""
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
        if self._shared_fd is not None:
            os.close(self._shared_fd)
            self._shared_fd = None
        self._users.clear()


class _Hold:
    __slots__ = ("_key", "_locks")

    def __init__(self, locks: TaskLocks, key: str) -> None:
        self._locks = locks
        self._key = key

    async def __aenter__(self) -> None:
        if not self._locks.try_acquire(self._key):
            await self._locks.acquire(self._key)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._locks.release(self._key)
