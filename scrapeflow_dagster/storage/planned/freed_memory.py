"""Memory a process freed, given back to the system.

A process that creates a large run allocates and frees hundreds of megabytes of short-lived
objects (the run's partition keys read three times, its planned rows built chunk by chunk).
Python frees them, but glibc's allocator keeps most of the freed pages mapped in the process:
measured on 2026-11-28, the `dagster asset materialize` process's RSS grew ~0.8-1.0 KB per task
while its live heap grew 0.43 KB, and that memory stays counted against the run's process tree
while the run's steps go on. `malloc_trim(0)` returns the free pages at the top of each heap
and the whole free pages inside them (glibc >= 2.8). Where there is no glibc (macOS, musl),
nothing is done.
"""

import ctypes
import ctypes.util
import functools
import logging
from collections.abc import Callable

logger = logging.getLogger(__name__)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # no libc to load, or not glibc's
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def give_back_freed_memory() -> bool:
    """Return the process's free heap pages to the system (see the module); whether the
    allocator could (False without glibc, or when it had nothing to return)."""
    trim = _malloc_trim()
    if trim is None:
        return False
    returned = bool(trim(0))
    logger.debug("malloc_trim: %s", "pages returned" if returned else "nothing to return")
    return returned
