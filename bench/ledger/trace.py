"""File system calls of a process tree, from `strace -f -ff -y`, counted by where they landed.

Every path is put in one place (`where`): `status` (the status files), `bodies` (the other
files of the status folder: stored bodies and outputs), `state` (the status folder's hidden
folders: stripe locks, politeness and robots state), `spool` (the ledger spool's row files),
`journal` (its open-ledger markers and their journals, `ledger-spool/.open/`), `duckdb` (the
DuckDB file and its WAL), `home` (the Dagster home), `other` (anything else on disk: caches,
/tmp, /dev/null) and `stream` (pipes and sockets: the site, stdout). A temp file written to be
renamed into place (`.<name>.<pid>.<n>.tmp`, or any name under a folder) counts where its
target lands.

A file counts as created when opened with O_CREAT while absent (absent at the start: the
folders are listed before the command runs; or unlinked or renamed away since), or when a
name is linked to it (`link`; an `O_TMPFILE` given its name by `linkat`, whose bytes count
where that name lands). SQLite's journal, made and deleted by each write transaction, is
created each time.
"""

import contextlib
import heapq
import re
import shutil
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

STRACE = "strace"
SYSCALLS = (
    "open,openat,creat,link,linkat,rename,renameat,renameat2,unlink,unlinkat,fsync,fdatasync,"
    "flock,fcntl,"
    "write,pwrite64,writev,pwritev,pwritev2"
)
PLACES = ("status", "bodies", "state", "spool", "journal", "duckdb", "home", "other", "stream")

_CALL = re.compile(
    r"^(?P<time>\d+\.\d+) (?P<name>\w+)\((?P<args>.*)\)"
    r"\s+=\s+(?P<ret>-?\d+|0x[0-9a-f]+)(?P<rest>.*)$"
)
_RET_PATH = re.compile(r"^<(?P<path>[^>]*)>")
_FD_PATH = re.compile(r"^-?\d+<(?P<path>[^>]*)>")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_DIRFD = re.compile(r"(AT_FDCWD|\d+)<(?P<path>[^>]*)>")


def strace_path() -> str | None:
    """The strace binary, or None when it is not installed."""
    return shutil.which(STRACE)


def strace_command(output_prefix: Path) -> list[str]:
    """The strace prefix of a measured command: every thread's file calls, one file per thread
    (`<prefix>.<tid>`: no interleaved or resumed lines), paths of descriptors shown, no data."""
    return [
        strace_path() or STRACE,
        "-f",
        "-ff",
        "-y",
        "-qq",
        "-ttt",
        "-s",
        "0",
        "--seccomp-bpf",
        "-e",
        "signal=none",
        "-e",
        f"trace={SYSCALLS}",
        "-o",
        str(output_prefix),
    ]


@dataclass
class Places:
    """Which folders are which place."""

    data_dir: Path
    home: Path

    def of(self, path: str) -> str:
        """The place of an absolute path or of strace's name of a descriptor."""
        if not path.startswith("/"):
            return "stream"
        p = Path(path)
        status = self.data_dir / "status"
        if p.is_relative_to(self.home):
            return "home"
        if p.is_relative_to(self.data_dir / "ledger-spool" / ".open"):
            return "journal"
        if p.is_relative_to(self.data_dir / "ledger-spool"):
            return "spool"
        if p.parent == self.data_dir and p.name.lstrip(".").startswith("scrapeflow.duckdb"):
            return "duckdb"
        if p.is_relative_to(status):
            rel = p.relative_to(status)
            if len(rel.parts) > 1:
                return "state"
            name = _target_name(p.name)
            return "status" if name.endswith(".status.json") else "bodies"
        return "other"


def _target_name(name: str) -> str:
    if name.startswith(".") and name.endswith(".tmp"):
        parts = name[1:].rsplit(".", 3)
        if len(parts) == 4:
            return parts[0]
    return name


@dataclass
class FileCounts:
    """What the traced calls did, by counter and place (`files_created`, `renames`, `fsyncs`,
    `locks`, `bytes_written`, `writes`)."""

    counts: Counter[tuple[str, str]] = field(default_factory=Counter)

    def add(self, counter: str, place: str, amount: int = 1) -> None:
        self.counts[(counter, place)] += amount

    def flat(self) -> dict[str, int]:
        """`counter` (all places) and `counter.place` totals."""
        out: Counter[str] = Counter()
        for (counter, place), n in self.counts.items():
            out[counter] += n
            out[f"{counter}.{place}"] += n
        return dict(out)


def _resolve(dirfd_arg: str, path: str) -> str:
    if path.startswith("/"):
        return path
    found = _DIRFD.match(dirfd_arg.strip())
    return f"{found.group('path')}/{path}" if found else path


def _two_paths(name: str, args: str) -> tuple[str, str] | None:
    strings = _STRING.findall(args)
    if len(strings) < 2:
        return None
    if name == "rename":
        return strings[0], strings[1]
    first_dirfd, _, rest = args.partition(",")
    second_dirfd = rest.split('",', 1)[1].split(",", 1)[0] if '",' in rest else ""
    return _resolve(first_dirfd, strings[0]), _resolve(second_dirfd, strings[1])


class _Tracer:
    def __init__(self, places: Places, existing: set[str]) -> None:
        self.places = places
        self.existing = existing
        self.out = FileCounts()
        self.unnamed: dict[int, str] = {}  # O_TMPFILE descriptors (per process: rarely reused)
        self.pending: dict[str, list[int]] = {}  # their bytes and writes, until linked

    def _link(self, name: str, args: str) -> None:
        paths = _two_paths("rename" if name == "link" else "renameat", args)
        if paths is None:
            return
        source, target = paths
        place = self.places.of(target)
        if source.startswith("/proc/self/fd/"):
            unnamed = self.unnamed.pop(int(source.rsplit("/", 1)[1]), "")
            written, writes = self.pending.pop(unnamed, [0, 0])
            self.out.add("bytes_written", place, written)
            self.out.add("writes", place, writes)
        if target not in self.existing:
            self.existing.add(target)
            self.out.add("files_created", place)

    def line(self, text: str) -> None:
        call = _CALL.match(text)
        if call is None or call.group("ret").startswith("-"):
            return  # failed calls, and lines strace cut short
        name, args, rest = call.group("name"), call.group("args"), call.group("rest")
        if name in ("open", "openat", "creat"):
            self._open(name, args, int(call.group("ret")), rest)
        elif name.startswith("rename"):
            paths = _two_paths(name, args)
            if paths:
                self.existing.discard(paths[0])
                self.existing.add(paths[1])
                self.out.add("renames", self.places.of(paths[1]))
        elif name in ("link", "linkat"):
            self._link(name, args)
        elif name.startswith("unlink"):
            strings = _STRING.findall(args)
            if strings:
                dirfd = args.split(",", 1)[0] if name == "unlinkat" else ""
                self.existing.discard(_resolve(dirfd, strings[0]))
        else:
            self._on_fd(name, args, int(call.group("ret"), 0))

    def _open(self, name: str, args: str, fd: int, rest: str) -> None:
        found = _RET_PATH.match(rest)
        path = found.group("path") if found else ""
        if "O_TMPFILE" in args:
            self.unnamed[fd] = path
            self.pending[path] = [0, 0]
            return
        if name != "creat" and "O_CREAT" not in args:
            return
        if not path or path in self.existing:
            return
        self.existing.add(path)
        self.out.add("files_created", self.places.of(path))

    def _on_fd(self, name: str, args: str, ret: int) -> None:
        found = _FD_PATH.match(args)
        place = self.places.of(found.group("path")) if found else "stream"
        if name in ("fsync", "fdatasync"):
            self.out.add("fsyncs", place)
        elif name == "flock":
            if "LOCK_UN" not in args:
                self.out.add("locks", place)
        elif name == "fcntl":
            if "SETLK" in args and "F_UNLCK" not in args:
                self.out.add("locks", place)
        elif found and found.group("path") in self.pending:
            self.pending[found.group("path")][0] += ret
            self.pending[found.group("path")][1] += 1
        elif name.startswith(("write", "pwrite")):
            self.out.add("bytes_written", place, ret)
            self.out.add("writes", place)


def count_trace(trace_files: Iterable[Path], places: Places, existing: set[str]) -> FileCounts:
    """Count the calls of every thread's trace file, merged in time order (a file one thread
    unlinks another may create again); `existing`: the files there at the start."""
    tracer = _Tracer(places, set(existing))
    with contextlib.ExitStack() as stack:
        streams = [stack.enter_context(p.open(errors="replace")) for p in trace_files]
        for text in heapq.merge(*streams, key=_stamp):
            tracer.line(text)
    return tracer.out


def _stamp(text: str) -> float:
    head = text.split(" ", 1)[0]
    try:
        return float(head)
    except ValueError:
        return 0.0


def files_under(*folders: Path) -> set[str]:
    """Every file under `folders` now (absolute paths as strace shows them)."""
    return {str(p) for folder in folders if folder.exists() for p in folder.rglob("*")}
