"""Locks on single bytes of one shared file: open-file-description locks (Linux).

They conflict between any two opens of the file, in one process too, and are dropped when the
last descriptor of an open closes (a dead process's included), as `flock` on a file of its
own would be; but one file holds any number of them, so a lock costs no file of its own (a new
file costs ~1 ms of kernel time on some disks, and one descriptor each while held open).
"""

import errno
import fcntl
import os
import struct

# None where the platform has no open-file-description locks: callers fall back to `flock`.
OFD_SETLK: int | None = getattr(fcntl, "F_OFD_SETLK", None)


def lock_byte(fd: int, offset: int) -> bool:
    """Lock the byte at `offset` of the open file `fd`; False when another open holds it.

    Raises:
        OSError: for any failure other than the byte being held (never on Linux otherwise).
    """
    return _set(fd, offset, fcntl.F_WRLCK)


def unlock_byte(fd: int, offset: int) -> None:
    """Let go of the byte at `offset`, locked through `fd`."""
    _set(fd, offset, fcntl.F_UNLCK)


def _set(fd: int, offset: int, kind: int) -> bool:
    assert OFD_SETLK is not None, "no open-file-description locks on this platform"
    # struct flock: l_type, l_whence, l_start, l_len, l_pid (0 for OFD locks), padded.
    args = struct.pack("@hhqqi4x", kind, os.SEEK_SET, offset, 1, 0)
    try:
        fcntl.fcntl(fd, OFD_SETLK, args)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True
