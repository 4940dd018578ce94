"""The frontier lock and the batch files (`<data>/frontier/batches/ID.json`): a discovery
holds the lock while it writes its batch (its new tasks and frontier rows) and applies it; the
batch is then kept until the driver that runs its tasks finishes it.
"""

import dataclasses
import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from scrapeflow_dagster.engine.crawl.frontier.generation import is_stale, settle_generation
from scrapeflow_dagster.engine.crawl.frontier.journal import frontier_dir
from scrapeflow_dagster.engine.state.atomic import write_bytes_atomic
from scrapeflow_dagster.engine.state.layout import DataLayout


@contextmanager
def frontier_lock(layout: DataLayout) -> Iterator[None]:
    """Hold the data dir's frontier lock (waits for another discovery; freed if we are killed)."""
    fd = os.open(frontier_dir(layout) / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        settle_generation(layout)
        yield
    finally:
        os.close(fd)


@dataclass
class FrontierBatch:
    """One discovery's result: the tasks it adds and the links it saw.

    `children` are `{"key", "params"}`; `rows` are frontier rows as dicts (`FrontierRow`
    fields); `keys` the keys that are new tasks after storing (set when applied), `outcomes`
    the rows' count per depth (as text) and outcome; `streamed_by` the run that took its tasks
    into its own pass (a crawl streamed through one run), if one did.
    """

    id: str
    parents: list[str]
    children: list[dict[str, Any]] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    crawls: list[str] = field(default_factory=list)
    applied: bool = False
    keys: list[str] = field(default_factory=list)
    outcomes: dict[str, dict[str, int]] = field(default_factory=dict)
    streamed_by: str | None = None

    def to_bytes(self) -> bytes:
        """The batch as written to disk."""
        return orjson.dumps(self.__dict__)

    @classmethod
    def from_bytes(cls, data: bytes, path: Path) -> "FrontierBatch":
        """A batch read back.

        Raises:
            ValueError: naming `path` when it is not a batch this module wrote.
        """
        try:
            return cls(**orjson.loads(data))
        except (orjson.JSONDecodeError, TypeError) as exc:
            raise ValueError(f"{path} is not a frontier batch: {exc}") from None


def new_batch_id() -> str:
    """A unique id whose order is creation order (a driver's run keys are built from it)."""
    return f"{time.time_ns():020d}-{os.getpid()}"


def batch_path(layout: DataLayout, batch_id: str) -> Path:
    """Where batch `batch_id` is kept."""
    return frontier_dir(layout) / "batches" / f"{batch_id}.json"


def save_batch(layout: DataLayout, batch: FrontierBatch) -> None:
    """Write `batch` atomically."""
    write_bytes_atomic(batch_path(layout, batch.id), batch.to_bytes())


def batches(layout: DataLayout) -> list[FrontierBatch]:
    """Every batch kept (applied or not), oldest first.

    Raises:
        ValueError: naming a batch file that cannot be read (never skipped: its tasks would
            never run).
    """
    if is_stale(layout):
        return []
    folder = frontier_dir(layout) / "batches"
    names = sorted(n for n in os.listdir(folder) if n.endswith(".json") and not n.startswith("."))
    return [FrontierBatch.from_bytes((folder / n).read_bytes(), folder / n) for n in names]


def pending_batches(layout: DataLayout) -> list[FrontierBatch]:
    """Applied batches whose tasks a driver has not finished with yet, oldest first."""
    return [batch for batch in batches(layout) if batch.applied]


def finish_batch(layout: DataLayout, batch_id: str) -> None:
    """Forget a batch once its tasks are partitions and their runs exist (or ran)."""
    batch_path(layout, batch_id).unlink(missing_ok=True)


def release_batch(layout: DataLayout, batch_id: str) -> None:
    """Hand a batch a run had taken into its pass back to every driver (`streamed_by`
    cleared): the run stopped before running all its tasks."""
    with frontier_lock(layout):  # (not written back into a frontier retired meanwhile)
        path = batch_path(layout, batch_id)
        try:
            batch = FrontierBatch.from_bytes(path.read_bytes(), path)
        except FileNotFoundError:
            return
        save_batch(layout, dataclasses.replace(batch, streamed_by=None))
