"""What a process has loaded by the time it builds the code location, kept out of the garbage
collector's way for the rest of the process.

A process that builds the definitions (`dagster asset materialize`, a code server, the
forkserver of step processes, `scrapeflow crawl`) has imported Dagster, its storages and ours
by then: some 180,000 objects that live as long as the process. Python's collector traverses
them in every full collection and again at the interpreter's exit, and the exit of
`dagster asset materialize` paid for it after its run had already succeeded: measured on 2
cores (2026-11-27), 0.8 s after a 2,000-task run, 1.2 s after a 10,000-task run, 0.4 s for
a process that only imported the location. `gc.freeze()` moves them to the permanent
generation, which no collection visits: those exits took 0.1 s. Forked step processes also
stop writing to the pages they share with their server (Python's advice before fork).

Frozen objects are never collected, so it is done once per process: a second freeze (a test
building definitions again) would also keep whatever cyclic garbage the process held then.

Before that, the collector is paused while the process imports the location and builds it
(`collection_paused`, in `definitions.py`) and, in the `scrapeflow` commands that load it
(`crawl`, `materialize`, `refresh`), while they import Dagster too: the collections that
importing ~1,800 modules triggers (~420, three of them full, each walking a heap that only
grows) find next to nothing to free. Where Dagster was imported before the location (the
`dagster` CLI, a code server, the step server's preload) only the location's own part is
paused. Measured on 2 cores (2026-11-27): importing the CLI's crawl and the location took
0.89 s with the collector, 0.74 s without. As Python advises for processes that freeze, the
freeze after a pause collects nothing first (see `freeze_loaded_objects`).
"""

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_frozen = False
_paused = False  # the collector was disabled here, and is to be enabled again here


def pause_collection() -> None:
    """Disable the cyclic collector until `resume_collection` (or the freeze of the location
    that a build ends with); nothing when it was disabled already by someone else."""
    global _paused
    with _lock:
        if gc.isenabled():
            gc.disable()
            _paused = True


def resume_collection() -> None:
    """Enable the collector again if `pause_collection` disabled it."""
    global _paused
    with _lock:
        if _paused:
            gc.enable()
            _paused = False


@contextmanager
def collection_paused() -> Iterator[None]:
    """`pause_collection` for the block (a command importing Dagster and a location), then
    `resume_collection` however the block ends: a build by `scrapeflow_definitions` resumes
    collection as it freezes, any other location only here."""
    pause_collection()
    try:
        yield
    finally:
        resume_collection()


def freeze_loaded_objects() -> bool:
    """Move every object the process's collector tracks to the permanent generation, the
    first time only, and resume a paused collector; returns whether this call froze."""
    global _frozen
    try:
        with _lock:
            if _frozen:
                return False
            _frozen = True
        # No full collection first: it walked all ~190,000 objects (0.15 s) to free ~2,000,
        # and measured alternated on 2 cores (2026-11-27, 8 rounds each) the crawl took
        # 2.78 s with it, 2.56 s without; the demo's chain run 7.25 and 7.18 s, a 305-task
        # chain on the bench site 2.47 and 2.35 s. (The full collections that follow while
        # the collector's count of old objects is still 0 walk only what the run made.)
        gc.freeze()
        return True
    finally:
        resume_collection()
