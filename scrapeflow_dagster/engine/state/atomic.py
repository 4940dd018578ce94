"""Atomic file writes: a reader sees the old file or the new one, never a torn one."""

import errno
import itertools
import os
from pathlib import Path

import orjson

_counter = itertools.count()
# The pid names temp files; read once (a syscall per write showed up in profiles of 100,000
# new tasks) and again in a forked child, whose temp names must differ from its parent's.
_pid = os.getpid()


def _note_fork() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_note_fork)

# What os.link raises where a file system has no hard links (FAT, some FUSE and SMB mounts).
_NO_HARD_LINKS = (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK)


def _write_temp(target: str, data: bytes) -> str:
    """Write `data` to a new temp file beside `target`; its path (removed again on failure)."""
    # A per-process counter names the temp file: cheaper than mkstemp's random retries, and
    # unique among live writers because no two share a pid. The leading dot hides temp files
    # from status scans.
    folder, sep, name = target.rpartition(os.sep)  # os.path.split's work, without its checks
    tmp = f"{folder}{sep}.{name}.{_pid}.{next(_counter)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    try:
        fd = os.open(tmp, flags, 0o644)
    except FileExistsError:
        # A leftover of a killed process whose pid came back. Unlinked, never truncated in
        # place: a kill inside `create_bytes_atomic` leaves it as a second name of its target.
        os.unlink(tmp)
        fd = os.open(tmp, flags, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    return tmp


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def write_bytes_atomic(path: Path | str, data: bytes) -> None:
    """Write `data` to `path` through a temp file in the same folder and `os.replace`.

    Survives a process crash (SIGKILL) at any moment; it does not fsync, so a power loss may
    still lose the newest version (never tear it into an unreadable file on journaling file
    systems that order data before rename, as ext4 does by default).

    Raises:
        OSError: when the folder is missing or not writable.
    """
    target = os.fspath(path)
    tmp = _write_temp(target, data)
    try:
        os.replace(tmp, target)
    except BaseException:
        # A failed or cancelled write leaves no temp file behind.
        _unlink_quietly(tmp)
        raise


def create_bytes_atomic(path: Path | str, data: bytes) -> bool:
    """Write `data` to `path` as `write_bytes_atomic` does, but only if `path` does not exist.

    The temp file is hard-linked to `path`, which fails when `path` exists, however recently
    another process created it: the check and the write are one step, so no existence check
    is needed first and a concurrent writer's file is never overwritten. The same crash
    guarantees as `write_bytes_atomic` (a kill leaves at most a temp file that
    `sweep_stale_temp_files` removes).

    Returns:
        True when written, False when `path` existed (left untouched).

    Raises:
        OSError: when the folder is missing or not writable.
    """
    target = os.fspath(path)
    tmp = _write_temp(target, data)
    try:
        os.link(tmp, target)
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
        # No hard links here: check, then replace (another writer may slip in between).
        if os.path.lexists(target):
            return False
        os.replace(tmp, target)
        return True
    finally:
        _unlink_quietly(tmp)  # after `link`, `path` keeps the data
    return True


def write_json_atomic(path: Path | str, obj: object, *, indent: bool = True) -> None:
    """Serialise `obj` with orjson (indent 2, as scrapeflow did) and write it atomically."""
    write_bytes_atomic(path, json_bytes(obj, indent=indent))


def json_bytes(obj: object, *, indent: bool = True) -> bytes:
    """`obj` as `write_json_atomic` writes it."""
    option = orjson.OPT_INDENT_2 if indent else 0
    return orjson.dumps(obj, option=option | orjson.OPT_NON_STR_KEYS)


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
