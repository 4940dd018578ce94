"""The frontier's own files in `<data>/frontier/`, written so that a kill at any moment loses
nothing and a replay duplicates nothing:

    .lock              held (flock) while discovery runs: one discovery at a time per data dir
    expanded.txt       keys whose links were taken in (appended; a torn last line is cut off;
                       `-<TAB>key` takes a key out again, for a crawl that grows in place)
    added.tsv          `crawl<TAB>key` of every task discovery added (a crawl's budget count)
    lastmod.tsv        `key<TAB>lastmod` (ISO, UTC) of each page a sitemap dates (appended;
                       the last line of a key wins): `scrapeflow refresh` reads it
    hand-keys.tsv      `key<TAB>fingerprint` of tasks whose key was given by hand (a cache:
                       stored params never change, so each is read from its status file once)
    batches/ID.json    one discovery: its new tasks and frontier rows, written before they are
                       stored (`applied` false: replayed by the next discovery), then kept until
                       the driver that runs them calls `finish_batch` (a run that takes
                       them into its own pass, `streamed_by`, finishes them as it ends)
    streamed/TOKEN/    what each step of a crawl's streamed run took in, for the crawl's
                       driver to report (`take_stream_summaries` removes them)
    generation         the identity of the status folder these files belong to
    retired/STAMP-ID/  the files above of a status folder that is gone

This module names the folder and its files, and reads and appends their lines. Each file has a
module that reads and writes it:

    batches             `.lock` (`frontier_lock`) and `batches/`
    expanded_and_added  `expanded.txt` and `added.tsv`, and `JournalTail` that reads them as
                        they grow
    lastmods            `lastmod.tsv`
    discovery_memo      `hand-keys.tsv` (with the fingerprints it caches)
    stream_summaries    `streamed/`
    generation          `generation` and `retired/`: whose files these are
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
