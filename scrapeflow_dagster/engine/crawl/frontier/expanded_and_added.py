"""The two journals every discovery appends to: `expanded.txt` (the parents whose links were
taken in, and reopenings) and `added.tsv` (the tasks added per crawl, its budget count), and
`JournalTail`, which reads either as it grows.
"""

import os
from collections.abc import Iterable

from scrapeflow_dagster.engine.crawl.frontier.generation import is_stale, journal_lines
from scrapeflow_dagster.engine.crawl.frontier.journal import (
    ADDED_NAME,
    EXPANDED_NAME,
    append_lines,
    frontier_dir,
)
from scrapeflow_dagster.engine.state.layout import DataLayout

# Keys hold no tab (no control character): a line starting with this one is no key.
_REOPEN = "-\t"


def expanded_keys(layout: DataLayout) -> set[str]:
    """Keys whose links discovery has taken in (and not reopened since)."""
    expanded: set[str] = set()
    take_expanded_lines(expanded, journal_lines(layout, EXPANDED_NAME))
    return expanded


def take_expanded_lines(expanded: set[str], lines: Iterable[str]) -> None:
    """Apply lines of `expanded.txt` (keys, and `-<TAB>key` reopenings) to `expanded`."""
    for line in lines:
        if line.startswith(_REOPEN):
            expanded.discard(line[len(_REOPEN) :])
        else:
            expanded.add(line)


def mark_expanded(layout: DataLayout, keys: Iterable[str]) -> None:
    """Note that the links of `keys` were taken in."""
    append_lines(frontier_dir(layout) / EXPANDED_NAME, keys)


def reopen(layout: DataLayout, keys: Iterable[str]) -> None:
    """Let discovery take in the links of `keys` again (their crawl's settings changed)."""
    append_lines(frontier_dir(layout) / EXPANDED_NAME, (_REOPEN + key for key in keys))


def crawl_sizes(layout: DataLayout) -> dict[str, int]:
    """Tasks discovery added per crawl (distinct keys; the seed not counted)."""
    sizes: dict[str, int] = {}
    take_added_lines(sizes, set(), journal_lines(layout, ADDED_NAME))
    return sizes


def take_added_lines(sizes: dict[str, int], seen: set[str], lines: Iterable[str]) -> None:
    """Count lines of `added.tsv` not in `seen` (which they join) into `sizes` per crawl."""
    for line in lines:
        if line in seen:
            continue
        seen.add(line)
        crawl, _, _ = line.partition("\t")
        sizes[crawl] = sizes.get(crawl, 0) + 1


def note_added(layout: DataLayout, pairs: Iterable[tuple[str, str]]) -> None:
    """Append `(crawl, key)` pairs of added tasks."""
    append_lines(frontier_dir(layout) / ADDED_NAME, (f"{c}\t{k}" for c, k in pairs))


class JournalTail:
    """What was appended to one journal file since this reader last read it.

    A crawl streamed through one run discovers every few pages, and each discovery read
    `expanded.txt` and `added.tsv` whole: measured (2026-11-27, tmpfs) 0.09 s per discovery
    at 100,000 tasks, 1.1 s at 1,000,000. A reader kept across discoveries
    (`discovery_memo.DiscoveryMemo`) reads only the new lines, and starts over whenever they might
    not continue what it read: the file replaced, retired or gone, its start changed, or the
    frontier stale.
    """

    HEAD_BYTES = 256

    def __init__(self, name: str) -> None:
        self.name = name
        self._inode: tuple[int, int] | None = None
        self._head = b""  # the file's first bytes as last read: a new file differs
        self._offset = 0  # bytes read: whole lines only

    def read(self, layout: DataLayout) -> tuple[bool, list[str]]:
        """`(restarted, lines)`: the whole lines appended since the last read; `restarted`
        when they are the file's lines from its start (the caller drops what it built)."""
        if is_stale(layout):
            return self._start_over(None), []
        try:
            fd = os.open(frontier_dir(layout) / self.name, os.O_RDONLY)
        except FileNotFoundError:
            return self._start_over(None), []
        try:
            stat = os.fstat(fd)
            inode = (stat.st_dev, stat.st_ino)
            head = os.pread(fd, min(self.HEAD_BYTES, self._offset), 0)
            restarted = inode != self._inode or stat.st_size < self._offset or head != self._head
            if restarted:
                self._start_over(inode)
            data = os.pread(fd, max(0, stat.st_size - self._offset), self._offset)
        finally:
            os.close(fd)
        end = data.rfind(b"\n") + 1  # a last line without its newline is still being written
        if self._offset < self.HEAD_BYTES:
            self._head = (self._head + data[:end])[: self.HEAD_BYTES]
        self._offset += end
        lines = [line for line in data[:end].decode("utf-8", "replace").splitlines() if line]
        return restarted, lines

    def _start_over(self, inode: tuple[int, int] | None) -> bool:
        self._inode, self._head, self._offset = inode, b"", 0
        return True
