"""Atomic file writes: a reader sees the old file or the new one, never a torn one."""

import itertools
import os
from pathlib import Path

import orjson

_counter = itertools.count()


def write_bytes_atomic(path: Path | str, data: bytes) -> None:
    """Write `data` to `path` through a temp file in the same folder and `os.replace`.

    Survives a process crash (SIGKILL) at any moment; it does not fsync, so a power loss may
    still lose the newest version (never tear it into an unreadable file on journaling file
    systems that order data before rename, as ext4 does by default).

    Raises:
        OSError: when the folder is missing or not writable.
    """
    # A per-process counter names the temp file: cheaper than mkstemp's random retries, and
    # unique among live writers because no two share a pid. O_TRUNC, not O_EXCL: a leftover of
    # a killed process whose pid came back must be overwritten, not fail the run. The leading
    # dot hides temp files from status scans.
    target = os.fspath(path)
    folder, sep, name = target.rpartition(os.sep)  # os.path.split's work, without its checks
    tmp = f"{folder}{sep}.{name}.{os.getpid()}.{next(_counter)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        # A failed or cancelled write leaves no temp file behind.
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_json_atomic(path: Path | str, obj: object, *, indent: bool = True) -> None:
    """Serialise `obj` with orjson (indent 2, as scrapeflow did) and write it atomically."""
    option = orjson.OPT_INDENT_2 if indent else 0
    write_bytes_atomic(path, orjson.dumps(obj, option=option | orjson.OPT_NON_STR_KEYS))


def sweep_stale_temp_files(directory: Path | str) -> int:
    """Delete temp files left in `directory` by writers that no longer run (killed processes).

    Returns:
        How many were removed. A temp file of a live process is never touched.
    """
    removed = 0
    with os.scandir(directory) as entries:
        for entry in entries:
            name = entry.name
            if not (name.startswith(".") and name.endswith(".tmp")):
                continue
            parts = name.rsplit(".", 3)  # .<target>.<pid>.<n>.tmp
            if len(parts) != 4 or not parts[1].isdigit() or _alive(int(parts[1])):
                continue
            try:
                os.unlink(entry.path)
                removed += 1
            except FileNotFoundError:
                pass
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
