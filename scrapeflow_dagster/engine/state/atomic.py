"""Atomic file writes: a reader sees the old file or the new one, never a torn one."""

import errno
import itertools
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
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

    The data is written to a file without a name (or a temp file) that is then hard-linked to
    `path`, which fails when `path` exists, however recently another process created it: the
    check and the write are one step, so no existence check is needed first and a concurrent
    writer's file is never overwritten. A reader never sees it half written, and a kill leaves
    nothing behind (at most a temp file that `sweep_stale_temp_files` removes).

    Returns:
        True when written, False when `path` existed (left untouched).

    Raises:
        OSError: when the folder is missing or not writable.
    """
    folder, name = os.path.split(os.fspath(path))
    return create_files_atomic(folder or ".", [(name, data)])[0]


def create_files_atomic(directory: Path | str, files: Sequence[tuple[str, bytes]]) -> list[bool]:
    """`create_bytes_atomic` for many files of one folder: `(name, data)` pairs, in order.

    Linux: each file is first an `O_TMPFILE` (an inode without a name, freed by the kernel if
    the process dies) and then gets its one name by `linkat`: one change to the folder per file
    where a named temp file costs three (create, link, unlink). Elsewhere, or where the file
    system has no `O_TMPFILE`, or `/proc` is missing: the named temp file.

    Thousands of files are split among threads: the work is almost all in the kernel (the GIL
    is released there), and creating 100,000 files from two threads took 3-6 s on an ext4 where
    one thread took 10-14 s.

    Returns:
        For each file: True when written, False when it existed (left untouched).

    Raises:
        OSError: when the folder is missing or not writable (files created before stay).
    """
    folder = os.fspath(directory)
    writers = min(_MAX_WRITERS, os.cpu_count() or 1, len(files) // _FILES_PER_WRITER)
    if writers <= 1:
        return _create_files(folder, files)
    bounds = [len(files) * n // writers for n in range(writers + 1)]
    with ThreadPoolExecutor(writers, thread_name_prefix="create-files") as pool:
        parts = pool.map(
            lambda n: _create_files(folder, files[bounds[n] : bounds[n + 1]]), range(writers)
        )
        return [created for part in parts for created in part]


_MAX_WRITERS = 4
_FILES_PER_WRITER = 1_000  # below that, a thread costs more than it saves


def _create_files(folder: str, files: Sequence[tuple[str, bytes]]) -> list[bool]:
    results: list[bool] = []
    dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY) if _tmpfile_usable else None
    try:
        for name, data in files:
            created = None
            if dir_fd is not None and _tmpfile_usable:
                created = _create_unnamed(dir_fd, name, data)
            if created is None:  # no O_TMPFILE here: the named temp file
                created = _create_through_temp(os.path.join(folder, name), data)
            results.append(created)
    finally:
        if dir_fd is not None:
            os.close(dir_fd)
    return results


# Cleared for the process once a folder refuses O_TMPFILE or /proc/self/fd cannot be linked.
_tmpfile_usable = hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd")
# What openat(O_TMPFILE) or linkat from /proc raise where they are not supported.
_NO_TMPFILE = (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT, errno.EXDEV)


def _create_unnamed(dir_fd: int, name: str, data: bytes) -> bool | None:
    """Create `name` in the open folder through an O_TMPFILE; None when that is unsupported."""
    global _tmpfile_usable
    try:
        fd = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o644, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno not in _NO_TMPFILE:
            raise
        _tmpfile_usable = False
        return None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        # linkat(AT_FDCWD, "/proc/self/fd/N", dir_fd, name, AT_SYMLINK_FOLLOW): CPython calls
        # linkat (which follows the /proc link to the open inode) only when a dir fd is given.
        os.link(f"/proc/self/fd/{fd}", name, dst_dir_fd=dir_fd)
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno not in _NO_TMPFILE:
            raise
        _tmpfile_usable = False
        return None
    finally:
        os.close(fd)
    return True


def _create_through_temp(target: str, data: bytes) -> bool:
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
            if len(parts) != 4 or not parts[1].isdigit() or process_alive(int(parts[1])):
                continue
            try:
                os.unlink(entry.path)
                removed += 1
            except FileNotFoundError:
                pass
    return removed


def process_alive(pid: int) -> bool:
    """Whether process `pid` runs (another user's counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
