"""Per-task locks that hold across processes, so two runs never interleave on one task.

Locks are striped over a fixed number of lock files (flock), not one file per task: a
million tasks do not make a million lock files. Inside one process, an asyncio lock per stripe
comes first, because flock does not block coroutines of the same process from each other
without blocking the event loop.
"""

import asyncio
import fcntl
import hashlib
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

STRIPES = 1024
_POLL_SECONDS = 0.02


class TaskLocks:
    """Cross-process, coroutine-friendly locks keyed by task key, under `<directory>/.locks/`."""

    def __init__(self, directory: Path, *, stripes: int = STRIPES) -> None:
        self._dir = Path(directory) / ".locks"
        self._dir.mkdir(parents=True, exist_ok=True)
        self._stripes = stripes
        self._local: dict[int, asyncio.Lock] = {}

    def _stripe(self, key: str) -> int:
        digest = hashlib.blake2b(key.encode(), digest_size=4).digest()
        return int.from_bytes(digest, "big") % self._stripes

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """Hold the lock of `key` for the body of the `async with`."""
        stripe = self._stripe(key)
        local = self._local.setdefault(stripe, asyncio.Lock())
        async with local:
            fd = os.open(self._dir / f"{stripe:04d}.lock", os.O_RDWR | os.O_CREAT, 0o644)
            try:
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        await asyncio.sleep(_POLL_SECONDS)
                yield
            finally:
                os.close(fd)  # closing the descriptor releases the flock
