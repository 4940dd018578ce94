"""Progress bars on long work, drawn on stderr only when it is a terminal: tests, pipes and logs
get no bar. `tqdm` comes with Dagster."""

import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol, TypeVar

# Smaller files are read in well under a second: no bar.
MIN_BAR_BYTES = 256 * 1024
UPDATE_EVERY_LINES = 1000
_TICK_SECONDS = 0.5


class _Numbered(Protocol):
    @property
    def line(self) -> int: ...


_Item = TypeVar("_Item", bound=_Numbered)


def wanted() -> bool:
    """Whether to draw bars: stderr is a terminal."""
    return sys.stderr.isatty()


def file_lines(items: Iterable[_Item], path: Path) -> Iterator[_Item]:
    """`items` read from the task file `path` (each with its `line`), with a bar of lines read.

    Without a terminal, or for a small or unreadable file, `items` pass through untouched.
    """
    try:
        large = path.stat().st_size >= MIN_BAR_BYTES
    except OSError:
        large = False
    if not (large and wanted()):
        yield from items
        return
    from tqdm import tqdm

    with tqdm(total=_count_lines(path), desc=path.name, unit=" lines", file=sys.stderr) as bar:
        for item in items:
            # Per 1,000 lines: an update per task would cost more than the bar is worth.
            if item.line - bar.n >= UPDATE_EVERY_LINES:
                bar.update(item.line - bar.n)
            yield item
        bar.update(max(0, (bar.total or 0) - bar.n))


@contextmanager
def ticking(description: str) -> Iterator[None]:
    """A line that shows `description` and the time spent, while the block runs (on a terminal).

    For work that reports no progress of its own (a DuckDB rebuild).
    """
    if not wanted():
        yield
        return
    from tqdm import tqdm

    done = threading.Event()
    with tqdm(desc=description, bar_format="{desc}: {elapsed}", file=sys.stderr) as bar:

        def tick() -> None:
            while not done.wait(_TICK_SECONDS):
                bar.refresh()

        ticker = threading.Thread(target=tick, daemon=True)
        ticker.start()
        try:
            yield
        finally:
            done.set()
            ticker.join()


def _count_lines(path: Path) -> int:
    lines = 0
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            lines += chunk.count(b"\n")
    return lines
