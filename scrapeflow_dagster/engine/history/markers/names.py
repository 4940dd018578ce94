"""The open markers' folder and file names, and what tells one process from another.

The format (what a marker holds, its journal, who writes and reads them) is the package's
docstring: `engine.history.markers`.
"""

import functools
import socket
from pathlib import Path

OPEN_DIR_NAME = ".open"
MARKER_SUFFIX = ".json"
JOURNAL_SUFFIX = ".keys"
# Journal files a marker lists: the current batch's and the one before (see the package).
JOURNAL_FILES = 2


def open_dir(spool_dir: Path) -> Path:
    """The folder of the markers of `spool_dir` (a dot-folder: spool listings skip it)."""
    return Path(spool_dir) / OPEN_DIR_NAME


@functools.cache
def this_host() -> str:
    return socket.gethostname()


def process_start_ticks(pid: int) -> int | None:
    """When process `pid` started, in clock ticks since boot (Linux `/proc/<pid>/stat`).

    Tells a process from a later one that was given the same pid. None where there is no
    `/proc` or the process is gone.
    """
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # Field 22; the command name (field 2, in parentheses) may itself hold spaces or ')'.
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None
