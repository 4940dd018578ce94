"""A run's planned rows written a little ahead of its progress, not all at its start (Postgres).

Postgres gives a deleted row's space only to rows written after a VACUUM has seen it. Written
all before the run (as stock Dagster does, and as `planned_behind`'s thread does within the
run's first seconds), a refresh's planned rows (~1 KB per task with their index entries) find
no free space: the last run's materialisations, which the refresh supersedes, are all still
live. So the home grew by a run's planned rows at the second run and kept that, 1.44x its size
after one run at 10,000 tasks (issue 42's target: 1.2x). Here each asset's planned rows are
written `lead` partitions ahead of where the run's materialisations (and observations: our
executor assets log one per failed partition, which still gets its planned row: with its run's
failure it makes the partition read FAILED) have got to: by then the refresh's own
materialisations have superseded as many older ones, whose space the run's VACUUMs give back
(`postgres_vacuum`).

The run's progress is read from the event log (the storage's `_read_planned_progress`): its rows
of the asset since the last read. Where the run has got to is kept per region of the sorted keys
(`Frontier`): a run's shards each take a contiguous slice of them (`scaleout.shards`), so
progress shows up at as many places as there are shards, each found from its first
materialisations; a region's head runs `lead` keys past the furthest one done in it, skipping
keys already done (their planned row would only be deleted again).

A chunk holds the event log's insert lock (`postgres_write`) while it checks what supersedes its
rows (`planned_behind.drop_superseded`), as SQLite's write lock does there. What is left is
written at once, unpaced: when the run ends (its end event in the log, or stored by this
process, which waits for it: `PlannedBehind.wait`), when the storage is disposed of, and when
the process's main thread ends; nothing more once the run's events are deleted (through this
process, `PlannedBehind.discard`, or any other: seen at the next read). A failed read or write
is tried again for up to `RETRY_SECONDS`. Left as it is: partitions more than `lead` ahead of
the run show missing, not in progress, until the run gets near them (the UI's in-progress count
is about the lead per region, a region per shard); a region whose keys neither materialise nor
fail (a shard that hangs) gets no planned rows until the run ends. Where the run executes in
another process (launched by the daemon), its end is seen at the next read (0.5-5 s) and the
rest written after it: until then its unattempted and failed partitions read missing, not
FAILED. A run that never logs an end (its process killed, no run monitoring) keeps its thread
reading, every 5 s, until the process that created it ends, which then writes the rest; a
process killed with SIGKILL writes none, and those partitions read missing (the inbox sensor
runs missing tasks again). Each thread keeps its asset's sorted keys for the whole run (~60 MB
per asset at a million).
"""

import bisect
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from dagster._core.events.log import EventLogEntry

from scrapeflow_dagster.storage.planned.freed_memory import give_back_freed_memory
from scrapeflow_dagster.storage.planned.rows import PlannedTemplate, Row

logger = logging.getLogger(__name__)

# How often a run's progress is read while its head is as far ahead as it goes; while nothing
# changes, less and less often, down to once every MAX_POLL_SECONDS.
DEFAULT_POLL_SECONDS = 0.5
MAX_POLL_SECONDS = 5.0
_IDLE_BACKOFF = 1.5
# How long a read or write of the event log is tried again before the thread gives up.
RETRY_SECONDS = 300.0
_T = TypeVar("_T")

_NOTHING, _WRITTEN, _DONE = 0, 1, 2


@dataclass
class Progress:
    """What a run did since the last read: the keys of the asset it materialised, those it
    observed (our executor assets log an observation per failed partition), whether it ended,
    and the event id read up to."""

    materialised: list[str]
    observed: list[str]
    ended: bool
    upto: int
    gone: bool = False  # the run's events deleted (by any process): nothing more is written


ReadProgress = Callable[[int], Progress]
WriteRows = Callable[[list[EventLogEntry], list[Row]], None]


class Frontier:
    """Which of an asset's `total` planned rows (by position in the sorted keys) to write next,
    from the positions the run has done (see the module)."""

    def __init__(self, total: int, lead: int, written: int) -> None:
        """The first `written` positions are written already (before the run started)."""
        self._state = bytearray(total)
        self._state[:written] = b"\x01" * written
        self._lead = lead
        # Disjoint regions [start, head), sorted by start, each with the furthest done position.
        self._starts: list[int] = [0]
        self._regions: list[list[int]] = [[0, -1, written]]  # start, furthest done, head

    def done(self, positions: Iterable[int], *, materialised: bool = True) -> None:
        """The run got to `positions`: materialised them (their rows are skipped), or not
        (failed: their rows are written as a region's head passes them, and make the
        partitions read FAILED)."""
        for position in sorted(positions):
            if materialised:
                self._state[position] = _DONE
            at = bisect.bisect_right(self._starts, position) - 1
            region = self._regions[at] if at >= 0 else None
            if region is not None and position < max(region[2], region[1] + 1) + self._lead:
                region[1] = max(region[1], position)
            else:  # the run is at work where no region reaches: a shard's slice
                self._starts.insert(at + 1, position)
                # Its head at the position itself: written unless materialised (`ahead`).
                self._regions.insert(at + 1, [position, position, position])

    def ahead(self, most: int) -> list[int]:
        """Up to `most` positions to write now, each region's head moved up to `lead` past
        its furthest done position; marked written."""
        found: list[int] = []
        at = 0
        while at < len(self._regions) and len(found) < most:
            region = self._regions[at]
            target = min(len(self._state), region[1] + 1 + self._lead)
            while region[2] < target and len(found) < most:
                if at + 1 < len(self._regions) and region[2] >= self._starts[at + 1]:
                    following = self._regions.pop(at + 1)  # this head reached the next region
                    self._starts.pop(at + 1)
                    region[1], region[2] = max(region[1], following[1]), following[2]
                    target = min(len(self._state), region[1] + 1 + self._lead)
                    continue
                if self._state[region[2]] == _NOTHING:
                    self._state[region[2]] = _WRITTEN
                    found.append(region[2])
                region[2] += 1
            at += 1
        return found

    def rest(self) -> list[int]:
        """Every position neither written nor done, marked written."""
        found = [at for at, state in enumerate(self._state) if state == _NOTHING]
        for at in found:
            self._state[at] = _WRITTEN
        return found

    @property
    def complete(self) -> bool:
        """Whether no position is left to write."""
        return _NOTHING not in self._state


def write_paced(
    template: PlannedTemplate,
    written: int,
    *,
    lead: int,
    chunk: int,
    read_progress: ReadProgress,
    write: WriteRows,
    since: int,
    finish: threading.Event,
    discard: threading.Event,
    poll_seconds: float = DEFAULT_POLL_SECONDS,
) -> int:
    """Write `template`'s planned rows past the first `written`, `lead` ahead of the run's
    progress (read from event id `since` on), `chunk` per transaction; the rest at once once
    the run ends, `finish` is set or the main thread ends; nothing more once `discard` is set
    (the run's events deleted). Returns the rows written."""
    keys = template.keys
    frontier = Frontier(len(keys), lead, written)
    upto, count, wait = since, 0, poll_seconds
    main = threading.main_thread()
    while not (finish.is_set() or not main.is_alive()):
        progress = _retried(functools.partial(read_progress, upto), discard)
        if progress.gone:
            return count
        upto = progress.upto
        frontier.done(_positions(keys, progress.materialised))
        frontier.done(_positions(keys, progress.observed), materialised=False)
        if progress.ended:
            break
        positions = frontier.ahead(chunk)
        if positions:
            count += _write(template, positions, write, discard)
            wait = poll_seconds
            continue
        if frontier.complete:
            return count
        # A run waiting in the queue, or a long step between two flushes: read less often.
        wait = poll_seconds if progress.materialised or progress.observed else wait
        finish.wait(wait)
        wait = min(wait * _IDLE_BACKOFF, MAX_POLL_SECONDS)
    for part in _chunks(frontier.rest(), chunk):
        if discard.is_set():
            break
        count += _write(template, part, write, discard)
    return count


def _retried(call: Callable[[], _T], discard: threading.Event) -> _T:
    """`call()`, again after each failure (a lost connection, a server restarting, the pool
    exhausted) for up to `RETRY_SECONDS`: a run's later planned rows are not given up at the
    first error. Raises the last error after that, or `Discarded` once `discard` is set."""
    deadline = time.monotonic() + RETRY_SECONDS
    delay = 0.1
    while True:
        if discard.is_set():
            raise Discarded
        try:
            return call()
        except Exception as exc:
            if time.monotonic() + delay > deadline:
                raise
            logger.warning("planned rows ahead of a run: %s; trying again in %.1f s", exc, delay)
        discard.wait(delay)
        delay = min(2 * delay, MAX_POLL_SECONDS)


def _positions(keys: Sequence[str], done: Iterable[str]) -> Iterator[int]:
    for key in done:
        at = bisect.bisect_left(keys, key)
        if at < len(keys) and keys[at] == key:  # a key outside the run's (none expected)
            yield at


def _chunks(positions: list[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(positions), size):
        yield positions[start : start + size]


def _write(
    template: PlannedTemplate, positions: list[int], write: WriteRows, discard: threading.Event
) -> int:
    events, rows = template.rows([template.keys[at] for at in positions])
    _retried(lambda: write(events, rows), discard)
    return len(rows)


class Discarded(Exception):
    """The run's events were deleted while its planned rows were being written."""


def run_paced(run_id: str, target: Callable[[], int]) -> None:
    """`target` (a `write_paced`), logged as `planned_behind`'s thread logs."""
    try:
        count = target()
    except Discarded:
        logger.debug("run %s: its events deleted, its planned rows left unwritten", run_id)
    except Exception:
        logger.exception(
            "run %s: planned rows written ahead of its progress stopped (its partitions"
            " without one show missing, not in progress or failed)",
            run_id,
        )
    else:
        logger.debug("run %s: %d planned rows written ahead of its progress", run_id, count)
    finally:
        give_back_freed_memory()
