"""Per-task locks that hold across processes, so two runs never interleave on one task.

Across processes, locks are striped over a fixed number of lock files (flock), not one file per
task: a million tasks do not make a million lock files. Inside one process, coroutines lock
per key (asyncio) and share the process's hold on a stripe, so two tasks of the same run never
wait for each other just because their keys hash to the same stripe.
"""

import asyncio
import fcntl
import os
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

STRIPES = 256  # lock files are kept open while a TaskLocks lives: stay far below ulimit -n
_POLL_SECONDS = 0.02


class TaskLocks:
    """Cross-process, coroutine-friendly locks keyed by task key, under `<directory>/.locks/`."""

    def __init__(self, directory: Path, *, stripes: int = STRIPES) -> None:
        self._dir = os.path.join(os.fspath(directory), ".locks")
        os.makedirs(self._dir, exist_ok=True)
        self._stripes = stripes
        self._key_locks: dict[str, _KeyLock] = {}
        self._acquiring: dict[int, asyncio.Lock] = {}
        self._users: dict[int, int] = {}
        self._fds: dict[int, int] = {}

    def _stripe(self, key: str) -> int:
        # crc32 is stable across processes (unlike hash()) and cheap.
        return zlib.crc32(key.encode()) % self._stripes

    def _fd(self, stripe: int) -> int:
        fd = self._fds.get(stripe)
        if fd is None:
            path = os.path.join(self._dir, f"{stripe:04d}.lock")
            fd = self._fds[stripe] = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        return fd

    async def _take_stripe(self, stripe: int) -> None:
        if self._users.get(stripe):  # this process already holds the stripe: share it
            self._users[stripe] += 1
            return
        async with self._acquiring.setdefault(stripe, asyncio.Lock()):
            if not self._users.get(stripe):
                fd = self._fd(stripe)
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        await asyncio.sleep(_POLL_SECONDS)
            self._users[stripe] = self._users.get(stripe, 0) + 1

    def _drop_stripe(self, stripe: int) -> None:
        self._users[stripe] -= 1
        if not self._users[stripe]:
            del self._users[stripe]
            fcntl.flock(self._fds[stripe], fcntl.LOCK_UN)

    def close(self) -> None:
        """Close the lock files (releasing any flock still held)."""
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
        self._users.clear()

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """Hold the lock of `key` for the body of the `async with`."""
        entry = self._key_locks.setdefault(key, _KeyLock())
        entry.users += 1
        try:
            async with entry.lock:
                stripe = self._stripe(key)
                await self._take_stripe(stripe)
                try:
                    yield
                finally:
                    self._drop_stripe(stripe)
        finally:
            entry.users -= 1
            if not entry.users:
                del self._key_locks[key]


class _KeyLock:
    """An asyncio lock with a count of coroutines using it, so it is dropped when idle."""

    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0
