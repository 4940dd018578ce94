"""The inbox: task files dropped in `<data>/inbox/` become tasks, and no file is ever lost.

A file moves on only once what it asked for is safe somewhere else:

    inbox/NAME                    waiting; taken by the next tick
    inbox/accepted/DIGEST.json    a batch: the file's tasks are stored, their keys are
                                  partitions, and the runs to request are written down
    inbox/done/STAMP-NAME         the file itself (bad lines beside it, `.errors.txt`)
    inbox/done/STAMP-NAME.batch.json  the batch, once every run it lists exists

A tick killed at any point leaves either the file in the inbox (taken again: storing a task
and adding a partition are idempotent, so nothing is duplicated) or a batch in `accepted/`
(its runs are requested again, under the same run keys, until they exist).

A file is taken whole within one tick, so a big file is first cut into parts of
`PART_LINES` lines (`NAME.lines-FIRST-LAST.SUFFIX`, CSV parts keep the header) that later
ticks take one by one; errors still name the original file and line. The orchestrator
side (adding partitions, planning ranges, checking runs) is passed in as plain callables, so
this module stays free of Dagster.
"""

import dataclasses
import hashlib
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

import orjson

from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.state.atomic import write_json_atomic
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.tasks.adding import AddReport, add_tasks
from scrapeflow_dagster.engine.tasks.intake import MAX_LINE_BYTES, SUFFIXES, Item, read_task_file

# Ranges of partitions `(first_key, last_key)`, as orchestrator runs take them.
Ranges = list[tuple[str, str]]
AddPartitions = Callable[[Sequence[str]], object]
PlanFirstRuns = Callable[[Sequence[str]], Ranges]

_DIGEST_CHUNK_BYTES = 1 << 20
# Measured: ~0.3 ms per new task on ext4 (status file + DuckDB spool + partition), so a part
# takes ~6 s of a sensor's 60 s, and a tick can take a few.
PART_LINES = 20_000
_PART_NAME = re.compile(r"^(?P<source>.+)\.lines-(?P<first>\d+)-(?P<last>\d+)\.[A-Za-z]+$")


@dataclass(frozen=True)
class Batch:
    """One taken file: where it went, what it added, and the runs it asks for."""

    digest: str  # sha1 of the file's bytes: the same content dropped twice is one batch
    source: str  # the file's name in the inbox
    stored_as: str  # its name under inbox/done/
    accepted_at: str  # ISO time; part of run keys, so a later batch never reuses old ones
    tasks: int  # valid lines
    new: int  # tasks whose params were stored by this batch
    refused: int  # bad lines
    ranges: Ranges = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        """The batch as written to disk."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, object]) -> "Batch":
        """A batch read back from disk.

        Raises:
            ValueError: when `data` is not a batch this module wrote.
        """
        try:
            fields = dict(data)
            ranges = fields.pop("ranges", [])
            if not isinstance(ranges, list):
                raise TypeError("ranges must be a list")
            pairs = [(str(first), str(last)) for first, last in ranges]
            return cls(**fields, ranges=pairs)  # type: ignore[arg-type]
        except (TypeError, ValueError) as exc:
            raise ValueError(f"not an inbox batch: {exc}") from None


@dataclass(frozen=True)
class Taken:
    """What taking one file did (for the tick's log)."""

    batch: Batch
    errors: list[str]


@dataclass(frozen=True)
class Skipped:
    """A task file that could not be read this tick (left in the inbox), and why."""

    path: Path
    reason: str


def accepted_dir(layout: DataLayout) -> Path:
    """Batches whose runs have not all been created yet."""
    return layout.inbox_dir / "accepted"


def done_dir(layout: DataLayout) -> Path:
    """Taken files, their refused lines and their finished batches."""
    return layout.inbox_dir / "done"


def waiting_files(layout: DataLayout) -> list[Path]:
    """Task files in the inbox, oldest name first (`.part` and other suffixes are left)."""
    return sorted(
        p for p in layout.inbox_dir.iterdir() if p.is_file() and p.suffix.lower() in SUFFIXES
    )


def file_digest(path: Path) -> str:
    """The sha1 of the file's bytes (hex)."""
    digest = hashlib.sha1()
    with path.open("rb") as stream:
        while chunk := stream.read(_DIGEST_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def take_file(
    layout: DataLayout,
    path: Path,
    *,
    ledger: Ledger,
    add_partitions: AddPartitions,
    plan_first_runs: PlanFirstRuns,
) -> Taken:
    """Store the file's tasks, make their keys partitions, write its batch, then move it.

    Args:
        layout: the data folder.
        path: a file in the inbox.
        ledger: where new tasks are recorded for DuckDB.
        add_partitions: makes keys partitions (must be idempotent); called before the file
            moves, so a failure here leaves the file in the inbox.
        plan_first_runs: the ranges of runs for those of the keys that never ran.

    Raises:
        OSError: when the file or the data folder cannot be read or written; the file then
            stays in the inbox for the next tick.
    """
    digest = file_digest(path)
    report: AddReport = add_tasks(layout, _read_in_original_lines(path), ledger=ledger)
    ledger.flush()
    add_partitions(report.keys)
    batch_path = accepted_dir(layout) / f"{digest}.json"
    batch = _read_batch(batch_path)
    if batch is None:  # else a killed tick wrote it already: keep its run keys
        stamp = datetime.now(UTC)
        batch = Batch(
            digest=digest,
            source=path.name,
            stored_as=f"{stamp:%Y%m%dT%H%M%S}-{digest[:8]}-{path.name}",
            accepted_at=stamp.isoformat(),
            tasks=len(report.keys),
            new=report.new,
            refused=len(report.errors),
            ranges=plan_first_runs(report.keys),
        )
        batch_path.parent.mkdir(exist_ok=True)
        write_json_atomic(batch_path, batch.to_json())
    errors = [str(e) for e in report.errors]
    target = _free_name(done_dir(layout) / batch.stored_as)
    if errors:
        target.with_name(target.name + ".errors.txt").write_text("".join(f"{e}\n" for e in errors))
    shutil.move(path, target)
    return Taken(batch, errors)


def take_waiting_files(
    layout: DataLayout,
    *,
    ledger: Ledger,
    add_partitions: AddPartitions,
    plan_first_runs: PlanFirstRuns,
    max_files: int,
    budget_seconds: float,
    part_lines: int = PART_LINES,
) -> Iterator[Taken | Skipped]:
    """Take inbox files one by one, oldest name first, until `max_files` or `budget_seconds`
    is spent; the files left over wait for the next tick. A file that cannot be read is
    skipped for this tick (`Skipped`), not taken ahead of the others again and again.

    A file of more than `part_lines` lines is first cut into parts (see `split_into_parts`),
    so that no single take outlasts a tick.
    """
    started = time.monotonic()
    taken = 0
    unreadable: set[Path] = set()
    while taken < max_files and time.monotonic() - started <= budget_seconds:
        waiting = [p for p in waiting_files(layout) if p not in unreadable]
        if not waiting:
            return
        path = waiting[0]
        problem = _unreadable(path)
        if problem is not None:
            # Left in the inbox (its owner may fix it), but it must not hold back the files
            # behind it: every tick would otherwise fail on it again.
            unreadable.add(path)
            yield Skipped(path, problem)
            continue
        if split_into_parts(layout, path, part_lines=part_lines):
            continue  # its parts are in the inbox now, first in line
        taken += 1
        yield take_file(
            layout,
            path,
            ledger=ledger,
            add_partitions=add_partitions,
            plan_first_runs=plan_first_runs,
        )


def _unreadable(path: Path) -> str | None:
    """Why the task file `path` cannot be read, or None when its first byte can."""
    try:
        with path.open("rb") as stream:
            stream.read(1)
    except OSError as exc:
        return f"{path}: cannot be read ({exc.strerror or exc}); left in the inbox"
    return None


def split_into_parts(layout: DataLayout, path: Path, *, part_lines: int = PART_LINES) -> bool:
    """Cut a file of more than `part_lines` lines into parts in the inbox, then move it to
    `done/`; returns whether it did.

    Parts are written atomically and named by their line span, so a tick killed half-way
    writes the same parts again next time. The file is streamed in pieces of at most
    `MAX_LINE_BYTES`: a 100 MB line never sits in memory (intake refuses it later).
    """
    is_csv = path.suffix.lower() == ".csv"
    if _PART_NAME.match(path.name) or not _has_more_lines_than(path, part_lines + is_csv):
        return False
    with path.open("rb") as stream:
        header = stream.readline(MAX_LINE_BYTES) if is_csv else b""
        if is_csv and not header.endswith(b"\n"):
            return False  # a header this long is refused as a whole by intake
        first = 2 if is_csv else 1
        while True:
            tmp = path.with_name(f".{path.name}.part.tmp")
            with tmp.open("wb") as out:
                out.write(header)
                copied = _copy_lines(stream, out, part_lines)
            if not copied:
                tmp.unlink()
                break
            last = first + copied - 1
            os.replace(
                tmp, path.with_name(f"{path.name}.lines-{first:09d}-{last:09d}{path.suffix}")
            )
            first = last + 1
    stamp = f"{datetime.now(UTC):%Y%m%dT%H%M%S}"
    shutil.move(path, _free_name(done_dir(layout) / f"{stamp}-{path.name}"))
    return True


def _has_more_lines_than(path: Path, limit: int) -> bool:
    lines = 0
    with path.open("rb") as stream:
        while chunk := stream.read(_DIGEST_CHUNK_BYTES):
            lines += chunk.count(b"\n")
            if lines > limit:
                return True
    return False


def _copy_lines(stream: BinaryIO, out: BinaryIO, count: int) -> int:
    """Copy up to `count` lines from `stream` to `out` in bounded pieces; returns how many.
    A last line without a newline gets one."""
    copied = 0
    mid_line = False
    while copied < count:
        piece = stream.readline(MAX_LINE_BYTES)
        if not piece:
            if mid_line:
                out.write(b"\n")
                copied += 1
            break
        out.write(piece)
        mid_line = not piece.endswith(b"\n")
        copied += not mid_line
    return copied


def _read_in_original_lines(path: Path) -> Iterator[Item]:
    """Tasks and errors of `path`; for a part, with the original file's name and lines."""
    match = _PART_NAME.match(path.name)
    if match is None:
        yield from read_task_file(path)
        return
    original = path.with_name(match["source"])
    is_csv = path.suffix.lower() == ".csv"
    # A part's line 1 is the original's line `first`, or for CSV its header (line 1).
    offset = int(match["first"]) - (2 if is_csv else 1)
    for item in read_task_file(path):
        keep = item.line == 0 or (is_csv and item.line == 1)
        yield dataclasses.replace(
            item, path=original, line=item.line if keep else item.line + offset
        )


def pending_batches(layout: DataLayout) -> list[Batch]:
    """Batches whose runs may not all exist yet, oldest first.

    Raises:
        ValueError: naming a batch file that cannot be read (never skipped silently: its
            runs would be lost).
    """
    folder = accepted_dir(layout)
    if not folder.is_dir():
        return []
    batches = [_read_batch(p) for p in folder.glob("*.json")]
    found = [b for b in batches if b is not None]
    return sorted(found, key=lambda b: b.accepted_at)


def finish_batch(layout: DataLayout, batch: Batch) -> None:
    """Move a batch whose runs all exist next to its file under `done/`."""
    source = accepted_dir(layout) / f"{batch.digest}.json"
    target = done_dir(layout) / f"{batch.stored_as}.batch.json"
    target.parent.mkdir(exist_ok=True)
    if source.exists():
        source.replace(target)


def _free_name(target: Path) -> Path:
    """`target`, or `target` with a counter when the same content was dropped again."""
    target.parent.mkdir(exist_ok=True)
    copies = 1
    free = target
    while free.exists():
        copies += 1
        free = target.with_name(f"{target.stem}-{copies}{target.suffix}")
    return free


def _read_batch(path: Path) -> Batch | None:
    try:
        data = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, orjson.JSONDecodeError) as exc:
        raise ValueError(f"inbox batch {path} is unreadable: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"inbox batch {path} is not a JSON object")
    try:
        return Batch.from_json(data)
    except ValueError as exc:
        raise ValueError(f"inbox batch {path}: {exc}") from None
