"""The frontier's folder (`<data>/frontier/`) and its files' names, and their whole lines read
and appended (a torn last line cut off). What each file holds: the package's docstring.
"""

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from scrapeflow_dagster.engine.state.layout import DataLayout

FRONTIER_DIR_NAME = "frontier"
# What belongs to one status folder (`streamed/` and `crawl.log` belong to running crawls).
EXPANDED_NAME = "expanded.txt"
ADDED_NAME = "added.tsv"
JOURNAL_NAMES = (EXPANDED_NAME, ADDED_NAME, "lastmod.tsv", "hand-keys.tsv", "batches")


def frontier_dir(layout: DataLayout) -> Path:
    """The folder of the frontier's files (created)."""
    path = layout.root / FRONTIER_DIR_NAME
    (path / "batches").mkdir(parents=True, exist_ok=True)
    return path


def whole_lines(path: Path) -> Iterator[str]:
    """The whole lines of the journal file `path` (none when it does not exist)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    # Only whole lines: a kill in the middle of an append leaves a last line without newline.
    end = data.rfind(b"\n")
    for line in data[: end + 1].decode("utf-8", "replace").splitlines():
        if line:
            yield line


def append_lines(path: Path, lines: Iterable[str]) -> None:
    """Append `lines` to the journal file `path`; the caller holds the frontier lock.

    A last line without its newline was torn by a writer killed mid-append: it is cut off
    first. Ended with a newline instead, its start would read back as a whole line: a torn
    `docs-12` in `expanded.txt` as the key `docs-1`, whose links would never be taken in.
    """
    data = "".join(f"{line}\n" for line in lines).encode()
    if not data:
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size:
            whole = _whole_lines_size(fd, size)
            if whole != size:
                os.ftruncate(fd, whole)
        view = memoryview(data)
        while view:  # a regular file may take less than asked (a full disk: OSError next)
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _whole_lines_size(fd: int, size: int, chunk: int = 65536) -> int:
    """The length of the file's part that ends with its last newline (0: none)."""
    end = size
    while end > 0:
        start = max(0, end - chunk)
        block = os.pread(fd, end - start, start)
        newline = block.rfind(b"\n")
        if newline != -1:
            return start + newline + 1
        end = start
    return 0
