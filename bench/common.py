"""Shared helpers of the Dagster benchmarks (bench_dagster, bench_add_tasks, bench_graphql).

- `Site`: the bundled local site in its own process on a free 127.0.0.1 port, /health awaited.
- `make_home`: a temporary DAGSTER_HOME with a dagster.yaml (SQLite storage, telemetry off).
- `run_measured`: run a command with its wall time, the CPU and peak RSS of its whole process
  tree (`os.wait4`: the child and every descendant it waited for) and, sampled from
  /proc/<pid>/status (VmHWM), the peak RSS of each process of the tree, so a run worker
  spawned by the `dagster` CLI is told apart from the CLI itself.
- `MachineLoad`: how many cores other processes kept busy meanwhile (the machine may be shared).
- `print_table`, `write_json`, `graphql`, `wait_until`.
"""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
MIB = 1024 * 1024

# What scrapeflow's embedded default writes (scrapeflow_dagster/instance.py), so a benchmark
# home behaves like a user's: SQLite storage in the folder, telemetry off.
DAGSTER_YAML = """telemetry:
  enabled: false
run_queue:
  max_concurrent_runs: 4
"""

_SITE_CODE = """
import sys
from scrapeflow_dagster.site.server import run_site_forever
run_site_forever(
    "127.0.0.1",
    int(sys.argv[1]),
    pages=int(sys.argv[2]),
    page_bytes=int(sys.argv[3]),
    on_ready=lambda url: print(url, flush=True),
)
"""


# ----------------------------------------------------------------------------- small things


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(
    check: Callable[[], bool], *, timeout: float, interval: float = 0.1, what: str = "condition"
) -> float:
    """Call `check` until it returns True; returns the seconds waited.

    Raises:
        TimeoutError: when `timeout` seconds pass first.
    """
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"{what} not reached within {timeout:.0f} s")
        time.sleep(interval)
    return time.monotonic() - started


def http_ok(url: str, timeout: float = 2.0) -> bool:
    """True when GET `url` answers 200."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def graphql(
    url: str, query: str, variables: Mapping[str, Any] | None = None, *, timeout: float = 600
) -> dict[str, Any]:
    """POST a GraphQL query to `url` (e.g. http://127.0.0.1:3000/graphql); returns `data`.

    Raises:
        RuntimeError: when the answer carries GraphQL errors.
    """
    body = json.dumps({"query": query, "variables": dict(variables or {})}).encode()
    request = urllib.request.Request(
        url, data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        answer = json.loads(response.read())
    if answer.get("errors"):
        raise RuntimeError(f"GraphQL errors: {json.dumps(answer['errors'])[:2000]}")
    data: dict[str, Any] = answer["data"]
    return data


def mib(kib: float | None) -> float | None:
    return None if kib is None else kib / 1024


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str = "") -> None:
    """Print rows under headers, columns padded; floats with 2 decimals, None as '-'."""

    def cell(value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:,.2f}"
        if isinstance(value, int) and not isinstance(value, bool):
            return f"{value:,}"
        return str(value)

    texts = [[cell(v) for v in row] for row in rows]
    left = [[isinstance(v, str) for v in row] for row in rows]
    widths = [
        max([len(h)] + [len(r[i]) for r in texts if i < len(r)]) for i, h in enumerate(headers)
    ]
    if title:
        print(f"\n{title}")
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for r, lefts in zip(texts, left, strict=True):
        print(
            "  ".join(
                v.ljust(w) if lefts[i] else v.rjust(w)
                for i, (v, w) in enumerate(zip(r, widths, strict=False))
            ).rstrip()
        )
    sys.stdout.flush()


def write_json(path: str | None, report: Mapping[str, Any]) -> None:
    """Write `report` to `path` as indented JSON when a path is given."""
    if path:
        Path(path).write_text(json.dumps(report, indent=2, default=str) + "\n")
        print(f"\nfigures written to {path}")


def machine_info() -> dict[str, Any]:
    """Python version, CPUs and load average, for the JSON reports."""
    try:
        load = Path("/proc/loadavg").read_text().split()[:3]
    except OSError:
        load = []
    return {
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "loadavg": load,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


@contextlib.contextmanager
def temp_root(prefix: str, parent: str | None = None, keep: bool = False) -> Iterator[Path]:
    """A temporary folder for homes and data, deleted afterwards unless `keep`."""
    root = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        yield root
    finally:
        if keep:
            print(f"(kept {root})")
        else:
            subprocess.run(["rm", "-rf", str(root)], check=False)


# ----------------------------------------------------------------------------- Dagster homes


def make_home(root: Path, name: str, extra_yaml: str = "") -> Path:
    """A fresh DAGSTER_HOME `root/name` with dagster.yaml (SQLite storage, telemetry off)."""
    home = root / name
    home.mkdir(parents=True, exist_ok=False)
    (home / "dagster.yaml").write_text(DAGSTER_YAML + extra_yaml)
    return home


def bench_env(
    dagster_home: Path, data_dir: Path | None = None, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a measured command: our homes, no inherited Dagster settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DAGSTER_", "SCRAPEFLOW_"))}
    env["DAGSTER_HOME"] = str(dagster_home)
    env["PYTHONUNBUFFERED"] = "1"
    if data_dir is not None:
        env["SCRAPEFLOW_DATA_DIR"] = str(data_dir)
    env.update(extra or {})
    return env


# ----------------------------------------------------------------------------- the local site


class Site:
    """The bundled local site in its own process; `with Site(pages) as site: site.url`."""

    def __init__(self, pages: int, page_bytes: int = 20_000) -> None:
        self.pages = pages
        self.page_bytes = page_bytes
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def __enter__(self) -> "Site":
        for _attempt in range(3):  # the free port may be taken between the probe and the bind
            port = free_port()
            self.proc = subprocess.Popen(
                [PYTHON, "-c", _SITE_CODE, str(port), str(self.pages), str(self.page_bytes)],
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            assert self.proc.stdout is not None
            line = self.proc.stdout.readline().strip()
            if line.startswith("http://"):
                self.url = line
                break
            self._stop()
        else:
            raise RuntimeError("the local site did not start")
        try:
            wait_until(lambda: http_ok(self.url + "/health"), timeout=30, what="site /health")
        except TimeoutError:
            self._stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def _stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()  # run_site_forever stops cleanly on SIGTERM
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def cpu_seconds(self) -> float | None:
        """User + system CPU the site's process has used so far."""
        if self.proc is None:
            return None
        return proc_cpu_seconds(self.proc.pid)


# ----------------------------------------------------------------------------- /proc sampling


def _read_status_kib(pid: int, fields: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name in fields:
                    out[name] = int(rest.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return out


def proc_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process `pid` (its own, not its children's)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        ppid = int(text.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    return children


def descendants(root_pid: int) -> list[int]:
    """`root_pid` and every process below it, from /proc (Linux)."""
    children = _children_map()
    found: list[int] = []
    stack = [root_pid]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return " ".join(part.decode(errors="replace") for part in raw.split(b"\0") if part)


def process_role(cmdline: str) -> str:
    """A short name for a process of a Dagster command tree."""
    rules = (
        (("multiprocessing.spawn", "spawn_main"), "step worker (multiprocess executor)"),
        (("multiprocessing.resource_tracker",), "resource tracker"),
        (("api execute_run", "api execute_step"), "run worker (dagster api execute_run)"),
        (("dagster_webserver", "dagster-webserver"), "webserver"),
        (("dagster-daemon", "dagster._daemon", "daemon run"), "daemon"),
        (("api grpc", "code-server start", "code_server"), "code server"),
        (("dagster dev", "dagster.__main__ dev", "-m dagster dev"), "dagster dev"),
        (("asset materialize",), "dagster asset materialize (CLI)"),
        (("scrapeflow_dagster.cli",), "scrapeflow CLI"),
        (("tail -F",), "compute log tail"),
    )
    for needles, role in rules:
        if any(n in cmdline for n in needles):
            return role
    return cmdline[:60]


@dataclass
class ProcPeak:
    pid: int
    role: str
    cmdline: str
    peak_rss_mib: float
    cpu_seconds: float | None


class TreeSampler:
    """Samples VmHWM (peak RSS) and CPU of every process under `root_pid` in a thread.

    VmHWM is a high-water mark, so a process seen once near its end reports its true peak;
    one that lives less than `interval` may be missed (os.wait4's maximum still covers it).
    """

    def __init__(self, root_pid: int, interval: float = 0.2) -> None:
        self.root_pid = root_pid
        self.interval = interval
        self.peaks: dict[int, ProcPeak] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "TreeSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self) -> None:
        for pid in descendants(self.root_pid):
            status = _read_status_kib(pid, ("VmHWM",))
            if "VmHWM" not in status:
                continue
            known = self.peaks.get(pid)
            if known is None:
                cmd = _cmdline(pid)
                known = ProcPeak(pid, process_role(cmd), cmd[:300], 0.0, None)
                self.peaks[pid] = known
            known.peak_rss_mib = max(known.peak_rss_mib, status["VmHWM"] / 1024)
            cpu = proc_cpu_seconds(pid)
            if cpu is not None:
                known.cpu_seconds = cpu

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def by_role(self) -> dict[str, dict[str, float | None]]:
        """Per role: the largest peak RSS of its processes and their summed CPU seconds."""
        roles: dict[str, dict[str, float | None]] = {}
        for p in self.peaks.values():
            r = roles.setdefault(p.role, {"peak_rss_mib": 0.0, "cpu_seconds": 0.0, "count": 0})
            r["peak_rss_mib"] = max(r["peak_rss_mib"] or 0.0, p.peak_rss_mib)
            r["cpu_seconds"] = (r["cpu_seconds"] or 0.0) + (p.cpu_seconds or 0.0)
            r["count"] = (r["count"] or 0) + 1
        return roles


class MachineLoad:
    """Busy CPU seconds of the whole machine between `start()` and `stop()` (from /proc/stat)."""

    def __init__(self) -> None:
        self.busy0: float | None = None
        self.busy_seconds: float | None = None

    @staticmethod
    def _busy() -> float | None:
        try:
            with open("/proc/stat") as f:
                values = [int(x) for x in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle = values[3] + values[4]
        return (sum(values[:8]) - idle) / os.sysconf("SC_CLK_TCK")

    def start(self) -> None:
        self.busy0 = self._busy()

    def stop(self) -> None:
        busy1 = self._busy()
        if self.busy0 is not None and busy1 is not None:
            self.busy_seconds = busy1 - self.busy0


# ----------------------------------------------------------------------------- measured runs


@dataclass
class Measured:
    """What `run_measured` saw of one command."""

    label: str
    cmd: list[str]
    seconds: float
    returncode: int
    cpu_user_seconds: float
    cpu_system_seconds: float
    tree_peak_rss_mib: float  # os.wait4: max over the child and its waited-for descendants
    processes: list[ProcPeak] = field(default_factory=list)
    roles: dict[str, dict[str, float | None]] = field(default_factory=dict)
    machine_busy_cores: float | None = None
    other_busy_cores: float | None = None  # busy cores not used by this tree (nor `extra_cpu`)
    stdout_tail: str = ""
    stderr_tail: str = ""

    @property
    def cpu_seconds(self) -> float:
        return self.cpu_user_seconds + self.cpu_system_seconds

    def role_peak(self, role_prefix: str) -> float | None:
        peaks = [v["peak_rss_mib"] for k, v in self.roles.items() if k.startswith(role_prefix)]
        values = [p for p in peaks if p is not None]
        return max(values) if values else None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["cpu_seconds"] = self.cpu_seconds
        return data


def _tail(path: Path, limit: int = 3000) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-limit:].decode(errors="replace")


def run_measured(
    cmd: Sequence[str],
    *,
    env: Mapping[str, str],
    label: str = "",
    cwd: Path = REPO,
    timeout: float = 1800,
    check: bool = True,
    extra_cpu: Callable[[], float | None] | None = None,
    sample_interval: float = 0.2,
) -> Measured:
    """Run `cmd` to its end; wall time, CPU and peak RSS of its process tree.

    `extra_cpu` returns the CPU seconds of a helper process (e.g. the site) so that it is not
    counted as "other" load.

    Raises:
        RuntimeError: when `check` and the command exits non-zero or times out.
    """
    with tempfile.TemporaryDirectory(prefix="bench-out-") as tmp:
        out_path, err_path = Path(tmp) / "stdout", Path(tmp) / "stderr"
        load = MachineLoad()
        extra0 = extra_cpu() if extra_cpu else None
        with out_path.open("wb") as out, err_path.open("wb") as err:
            load.start()
            started = time.perf_counter()
            proc = subprocess.Popen(
                list(cmd), cwd=cwd, env=dict(env), stdout=out, stderr=err, start_new_session=True
            )
            timed_out = threading.Event()

            def kill_on_timeout() -> None:
                timed_out.set()
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)

            timer = threading.Timer(timeout, kill_on_timeout)
            timer.start()
            with TreeSampler(proc.pid, sample_interval) as sampler:
                _pid, status, usage = os.wait4(proc.pid, 0)
            seconds = time.perf_counter() - started
            timer.cancel()
            load.stop()
        proc.returncode = os.waitstatus_to_exitcode(status)
        # Leftovers of the tree (a forkserver, a grpc server) must not outlive the measurement.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        extra1 = extra_cpu() if extra_cpu else None
        # ru_maxrss is KiB on Linux
        measured = Measured(
            label=label,
            cmd=list(cmd),
            seconds=seconds,
            returncode=proc.returncode,
            cpu_user_seconds=usage.ru_utime,
            cpu_system_seconds=usage.ru_stime,
            tree_peak_rss_mib=usage.ru_maxrss / 1024,
            processes=sorted(sampler.peaks.values(), key=lambda p: -p.peak_rss_mib),
            roles=sampler.by_role(),
            stdout_tail=_tail(out_path),
            stderr_tail=_tail(err_path),
        )
    if load.busy_seconds is not None:
        measured.machine_busy_cores = load.busy_seconds / seconds
        helper = (extra1 - extra0) if extra0 is not None and extra1 is not None else 0.0
        measured.other_busy_cores = max(
            0.0, (load.busy_seconds - measured.cpu_seconds - helper) / seconds
        )
    if check and (measured.returncode != 0 or timed_out.is_set()):
        why = "timed out" if timed_out.is_set() else f"exit {measured.returncode}"
        raise RuntimeError(
            f"{label or cmd[0]} failed ({why}): {' '.join(cmd)}\n"
            f"--- stdout tail\n{measured.stdout_tail}\n--- stderr tail\n{measured.stderr_tail}"
        )
    return measured


# ----------------------------------------------------------------------------- long-lived services


class Service:
    """A long-lived command (dagster dev, the webserver) in its own process group.

    Stopped with SIGTERM to the group (then SIGKILL), so its children go too.
    """

    def __init__(self, cmd: Sequence[str], *, env: Mapping[str, str], log_path: Path) -> None:
        self.cmd = list(cmd)
        self.env = dict(env)
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.sampler: TreeSampler | None = None

    def __enter__(self) -> "Service":
        log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            self.cmd,
            cwd=REPO,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.sampler = TreeSampler(self.proc.pid, interval=0.5).__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.sampler is not None:
            self.sampler.__exit__()
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        # Children that ignored SIGTERM (grpc servers) still belong to the group.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc = None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, limit: int = 4000) -> str:
        return _tail(self.log_path, limit)
