"""Pages per second of one N-task `scrape` run (default 10,000): unsharded, 1 shard and 2 shards
(multiprocess executor, embedded SQLite home), then 1 and 2 Celery workers (Postgres home,
Redis broker; skipped when either is missing). Prints the ratios, 2 vs 1, and the per-task
costs behind the README's "Scaling out" figures.

Then where the time of each run went, to tell what sharding can split from what it cannot:
- phases from the run's own event log (read after the command ended): CLI start to run created,
  the planned events, each step's launch (process start), set-up, work and asset events, the
  gaps where no step ran, and the end; the seconds in which the shard steps ran (the only part
  shards parallelise) against the rest, and what Amdahl's law then allows for 2 shards;
- CPU seconds per role (the CLI parent, the forkserver, each forked step process, the site,
  Celery workers, Postgres, Redis, this bench's sampler, and the rest of the machine) over the
  whole run, and before, while and after the shard steps ran, sampled from /proc every 0.1 s.

`python -m bench.scaleout.bench_shards [--tasks N] [--no-celery]`
"""

import argparse
import bisect
import os
import re
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg

from bench.lib.homes import bench_env, make_home, temp_root
from bench.lib.proc_stats import cmdline, machine_busy_seconds, read_status_kib
from bench.lib.repo import REPO
from bench.lib.report import print_table
from bench.lib.site import Site
from bench.lib.tree_sampler import ProcPeak, TreeSampler, process_role
from scrapeflow_dagster.instance import dagster_yaml
from scrapeflow_dagster.scaleout.worker import start_worker

BIN = Path(os.sys.executable).parent  # type: ignore[attr-defined]
SHARDED = "bench.scaleout.sharded_defs"
UNSHARDED = "scrapeflow_dagster.definitions"
POSTGRES_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
REDIS_DB = 12  # the benchmark's own Redis database, emptied first


@dataclass
class Row:
    """One measured run."""

    label: str
    seconds: float
    tasks: int
    ok: bool
    extra: str = ""
    breakdown: "Breakdown | None" = field(default=None, repr=False)

    @property
    def pages_per_second(self) -> float:
        return self.tasks / self.seconds


def run(cmd: list[str], env: Mapping[str, str], timeout: float = 3600) -> tuple[float, int, str]:
    """Run `cmd` from the repository; (seconds, exit code, output tail)."""
    start = time.monotonic()
    done = subprocess.run(
        cmd, env=dict(env), cwd=REPO, capture_output=True, text=True, timeout=timeout
    )
    return time.monotonic() - start, done.returncode, (done.stdout + done.stderr)[-2000:]


# ---- Where the time of a run goes: CPU per role over time, phases from the run's event log ----

CLK_TCK = os.sysconf("SC_CLK_TCK")
STEP_PROCESS_ROLE = "step worker (multiprocess executor)"  # process_role: forkserver and forks
CLI_ROLE = "dagster asset materialize (CLI)"
FORKSERVER_ROLE = "forkserver (preloads the location)"
FORKED_ROLE = "forked step processes"
SITE_ROLE = "site (bundled HTTP site)"
CELERY_ROLE = "celery workers"
POSTGRES_ROLE = "postgres server"
REDIS_ROLE = "redis server"
BENCH_ROLE = "this bench (sampler thread)"
OTHER_ROLE = "rest of the machine (+ unsampled)"
MACHINE_ROLE = "machine busy (all cores)"
STEP_PREFIX = "  of which step "
SERVICE_NAMES = {"postgres": POSTGRES_ROLE, "redis-server": REDIS_ROLE}


def ppid_and_cpu(pid: int) -> tuple[int, float] | None:
    """Parent pid and user + system CPU seconds of `pid` from one read of /proc/<pid>/stat."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[1]), (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, IndexError, ValueError):
        return None


def service_roots() -> dict[int, str]:
    """The local Postgres and Redis servers' first processes (Postgres backends are their
    children), by process name; empty where /proc cannot tell."""
    procs: dict[int, tuple[str, int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry.name}/stat").read_text()
            name = text[text.index("(") + 1 : text.rindex(")")]
            procs[int(entry.name)] = (name, int(text.rsplit(")", 1)[1].split()[1]))
        except (OSError, ValueError, IndexError):
            continue
    return {
        pid: SERVICE_NAMES[name]
        for pid, (name, ppid) in procs.items()
        if name in SERVICE_NAMES and procs.get(ppid, ("", 0))[0] != name
    }


class PhaseSampler(TreeSampler):
    """A `TreeSampler` of the measured command (`peaks`, `by_role` as usual) that also keeps each
    process's CPU over time, so that CPU can be split by phase; samples processes outside the
    command's tree (the site, Celery workers, Postgres, Redis, this bench) under roles of their
    own, and the machine's busy seconds.

    Within the command's tree the forkserver (it imports the code location once) is told apart
    from the step processes forked from it, which keep its command line. One /proc listing per
    sample; /proc/<pid>/stat is read only for new processes and those of interest. A process's
    CPU is known as of its last sample (up to `interval` short for one that ended); one that
    lived less than `interval` is missed, and counts with the rest of the machine.
    """

    def __init__(self, helpers: Mapping[int, str], interval: float = 0.1) -> None:
        super().__init__(0, interval)  # the command's pid comes with `watch`
        self.roots: dict[int, str | None] = {os.getpid(): BENCH_ROLE, **helpers}
        self.role_of: dict[int, str] = {}
        self.cpu: dict[int, list[tuple[float, float]]] = {}  # pid: (time, CPU seconds) samples
        self.busy: list[tuple[float, float]] = []  # (time, machine busy seconds)
        self._member: dict[int, int | None] = {}  # pid: the root it runs under (None: no root)

    def watch(self, pid: int) -> None:
        """Sample the tree under `pid` (the measured command) from now on."""
        self.root_pid = pid
        self.roots[pid] = None
        self._member.pop(pid, None)

    def sample(self) -> None:
        now = time.time()
        busy = machine_busy_seconds()
        try:
            pids = sorted(int(e.name) for e in os.scandir("/proc") if e.name.isdigit())
        except OSError:
            return
        for pid in pids:
            if pid in self._member:
                continue
            if pid in self.roots:
                self._member[pid] = pid
                continue
            stat = ppid_and_cpu(pid)
            self._member[pid] = None if stat is None else self._member.get(stat[0])
        for pid in pids:
            root = self._member.get(pid)
            stat = None if root is None else ppid_and_cpu(pid)
            if root is None or stat is None:
                continue
            if pid not in self.role_of:
                self.role_of[pid] = self._role(pid, root, stat[0])
            self.cpu.setdefault(pid, []).append((now, stat[1]))
            if root == self.root_pid:
                self._peak(pid, stat[1])
        if busy is not None:
            self.busy.append((now, busy))

    def _role(self, pid: int, root: int, ppid: int) -> str:
        helper = self.roots.get(root)
        if helper is not None:
            return helper
        command = cmdline(pid)
        role = process_role(command) or "(gone)"
        script = re.search(r"[\w.]+\.py\b", command)
        if role == command[:60] and script:  # no rule matched: name it by its script
            role = f"helper {script.group(0)}"
        if role == STEP_PROCESS_ROLE and "multiprocessing.forkserver" in command:
            forked = self.role_of.get(ppid) in (FORKSERVER_ROLE, FORKED_ROLE)
            role = FORKED_ROLE if forked else FORKSERVER_ROLE
        return role

    def _peak(self, pid: int, cpu: float) -> None:
        status = read_status_kib(pid, ("VmHWM",))
        if "VmHWM" not in status:
            return
        known = self.peaks.get(pid)
        if known is None:
            known = ProcPeak(pid, self.role_of[pid], cmdline(pid)[:300], 0.0, None)
            self.peaks[pid] = known
        known.peak_rss_mib = max(known.peak_rss_mib, status["VmHWM"] / 1024)
        known.cpu_seconds = cpu

    @staticmethod
    def _at(samples: Sequence[tuple[float, float]], when: float) -> float:
        """The last sampled value at or before `when` (0 before the first)."""
        i = bisect.bisect_right(samples, when, key=lambda s: s[0])
        return samples[i - 1][1] if i else 0.0

    def cpu_by_role(
        self, start: float, end: float, names: Mapping[int, str] | None = None
    ) -> dict[str, float]:
        """CPU seconds per role between two wall-clock times (`names`: roles of some pids of
        their own), with the machine's busy seconds and what our roles leave of them."""
        roles: dict[str, float] = {}
        for pid, samples in self.cpu.items():
            role = (names or {}).get(pid) or self.role_of[pid]
            used = self._at(samples, end) - self._at(samples, start)
            roles[role] = roles.get(role, 0.0) + used
        if self.busy:
            machine = self._at(self.busy, end) - self._at(self.busy, start)
            roles[OTHER_ROLE] = machine - sum(roles.values())
            roles[MACHINE_ROLE] = machine
        return roles


@dataclass
class StepTimes:
    """Wall-clock times of one step, from the run's event log."""

    key: str
    worker_starting: float | None = None  # STEP_WORKER_STARTING (multiprocess executor)
    engine_event: float | None = None  # its first engine event (Celery: the task's submission)
    worker_up: float | None = None  # STEP_WORKER_STARTED (the step process runs)
    start: float | None = None  # STEP_START (resources initialised)
    first_asset_event: float | None = None  # its first materialisation or observation
    end: float | None = None  # STEP_SUCCESS or STEP_FAILURE
    pid: int | None = None
    asset_events: int = 0

    @property
    def launched(self) -> float | None:
        """When the orchestrator launched the step (its process, or its Celery task)."""
        return self.worker_starting or self.engine_event or self.start

    @property
    def name(self) -> str:
        """The step key without the asset's prefix: `scrape_shard[shard_0]`."""
        return self.key.split(".", 1)[-1]

    @property
    def is_shard(self) -> bool:
        return "_shard[" in self.key

    @property
    def rank(self) -> int:
        return 0 if self.name.endswith("_plan") else 2 if self.name.endswith("_collect") else 1


@dataclass
class RunLog:
    """What the run's own event log says about its timing."""

    created: float  # the run record's creation
    run_start: float | None
    run_end: float | None  # RUN_SUCCESS or RUN_FAILURE
    steps: list[StepTimes]

    @property
    def work_steps(self) -> list[StepTimes]:
        """The steps sharding splits: the shards (the unsharded asset: its one step)."""
        return [s for s in self.steps if s.is_shard] or self.steps


STEP_EVENTS = {
    dg.DagsterEventType.RUN_START,
    dg.DagsterEventType.RUN_SUCCESS,
    dg.DagsterEventType.RUN_FAILURE,
    dg.DagsterEventType.STEP_WORKER_STARTING,
    dg.DagsterEventType.STEP_WORKER_STARTED,
    dg.DagsterEventType.STEP_START,
    dg.DagsterEventType.STEP_SUCCESS,
    dg.DagsterEventType.STEP_FAILURE,
    dg.DagsterEventType.ENGINE_EVENT,
}
ASSET_EVENTS = {dg.DagsterEventType.ASSET_MATERIALIZATION, dg.DagsterEventType.ASSET_OBSERVATION}


def read_run_log(home: Path) -> RunLog | None:
    """The timing of the latest run of the Dagster home `home` (None without a run)."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        records = instance.get_run_records(limit=1)
        if not records:
            return None
        run_id = records[0].dagster_run.run_id
        log = RunLog(records[0].create_timestamp.timestamp(), None, None, [])
        steps: dict[str, StepTimes] = {}
        for entry in instance.all_logs(run_id, of_type=STEP_EVENTS):
            event = entry.dagster_event
            if event is None:
                continue
            kind, when = event.event_type, entry.timestamp
            if kind == dg.DagsterEventType.RUN_START:
                log.run_start = when
            elif kind in (dg.DagsterEventType.RUN_SUCCESS, dg.DagsterEventType.RUN_FAILURE):
                log.run_end = when
            if not entry.step_key:
                continue
            step = steps.setdefault(entry.step_key, StepTimes(entry.step_key))
            if kind == dg.DagsterEventType.STEP_WORKER_STARTING:
                step.worker_starting = when
            elif kind == dg.DagsterEventType.ENGINE_EVENT and step.engine_event is None:
                step.engine_event = when
            elif kind == dg.DagsterEventType.STEP_WORKER_STARTED:
                step.worker_up = when
                pid = getattr(event.event_specific_data, "metadata", {}).get("pid")
                if pid is not None and str(pid.value).isdigit():
                    step.pid = int(pid.value)
            elif kind == dg.DagsterEventType.STEP_START:
                step.start = when
            elif kind in (dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE):
                step.end = when
        for entry in instance.all_logs(run_id, of_type=ASSET_EVENTS):
            owner = steps.get(entry.step_key or "")
            if owner is not None:
                owner.asset_events += 1
                if owner.first_asset_event is None or entry.timestamp < owner.first_asset_event:
                    owner.first_asset_event = entry.timestamp
    log.steps = sorted(steps.values(), key=lambda s: (s.launched or 0.0, s.key))
    return log


def span(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def union_seconds(intervals: Sequence[tuple[float, float]]) -> float:
    """Seconds covered by at least one of `intervals`."""
    total, reach = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b > reach:
            total += b - max(a, reach)
            reach = b
    return total


PhaseKey = tuple[int, int, str, int]


@dataclass
class Breakdown:
    """Where the time of one measured run went."""

    cli_start: float
    cli_end: float
    log: RunLog | None
    sampler: PhaseSampler

    @property
    def seconds(self) -> float:
        return self.cli_end - self.cli_start

    def _work_times(self) -> list[tuple[float, float]]:
        """(STEP_START, end) of each shard step (unsharded: of the asset's step)."""
        steps = self.log.work_steps if self.log else []
        return [(s.start, s.end) for s in steps if s.start is not None and s.end is not None]

    @property
    def work_window(self) -> tuple[float, float] | None:
        """From the first shard step's STEP_START to the last one's end."""
        times = self._work_times()
        return (min(a for a, _ in times), max(b for _, b in times)) if times else None

    @property
    def parallel_seconds(self) -> float | None:
        """Seconds in which shard steps ran (union of their STEP_START..end): what shards split."""
        times = self._work_times()
        return union_seconds(times) if times else None

    def phases(self) -> dict[PhaseKey, tuple[str, float | int | None]]:
        """The run's phases in seconds, by a key that orders them across runs. Steps that run
        at the same time overlap: only the summary lines add up to the total."""
        out: dict[PhaseKey, tuple[str, float | int | None]] = {}
        log = self.log
        created = log.created if log else None
        out[(0, 0, "", 0)] = ("CLI start -> run created", span(self.cli_start, created))
        if log is None:
            return out
        out[(0, 1, "", 0)] = (
            "run created -> RUN_START (planned events)",
            span(log.created, log.run_start),
        )
        launches = [s.launched for s in log.steps if s.launched]
        ends = [s.end for s in log.steps if s.end]
        first, last = (min(launches), max(ends)) if launches and ends else (None, None)
        out[(0, 2, "", 0)] = ("RUN_START -> first step launched", span(log.run_start, first))
        for s in log.steps:
            n = s.name
            if s.worker_up is None:  # Celery: submitted, then picked up and set up by a worker
                out[(1, s.rank, n, 2)] = (f"{n}: launched -> STEP_START", span(s.launched, s.start))
            else:
                up, ready = span(s.launched, s.worker_up), span(s.worker_up, s.start)
                out[(1, s.rank, n, 0)] = (f"{n}: launched -> process up", up)
                out[(1, s.rank, n, 1)] = (f"{n}: process up -> STEP_START", ready)
            out[(1, s.rank, n, 3)] = (f"{n}: STEP_START -> step end", span(s.start, s.end))
            if s.asset_events:
                before = span(s.start, s.first_asset_event)
                out[(1, s.rank, n, 4)] = (f"{n}:   until its 1st asset event", before)
                after = span(s.first_asset_event, s.end)
                out[(1, s.rank, n, 5)] = (f"{n}:   1st asset event -> step end", after)
                out[(1, s.rank, n, 6)] = (f"{n}:   asset events (count)", s.asset_events)
        if first is not None and last is not None:
            steps = [(s.launched or 0.0, s.end or 0.0) for s in log.steps if s.launched and s.end]
            gaps = (last - first) - union_seconds(steps)
            out[(2, 0, "", 0)] = ("between steps: none launched or running", gaps)
        out[(2, 1, "", 0)] = ("last step end -> RUN_SUCCESS", span(last, log.run_end))
        out[(2, 2, "", 0)] = ("RUN_SUCCESS -> CLI exit", span(log.run_end, self.cli_end))
        parallel = self.parallel_seconds
        out[(3, 0, "", 0)] = ("= total (CLI wall seconds)", self.seconds)
        out[(3, 1, "", 0)] = ("P: shard steps running (union)", parallel)
        rest = None if parallel is None else self.seconds - parallel
        out[(3, 2, "", 0)] = ("S: everything else (total - P)", rest)
        share = None if parallel is None else 100 * parallel / self.seconds
        out[(3, 3, "", 0)] = ("P share of the run (%)", share)
        return out

    def window(self, which: str) -> tuple[float, float] | None:
        """`whole` run (the samples before and after the command), `before`, `during` or
        `after` its shard steps."""
        busy = self.sampler.busy
        whole = (busy[0][0], busy[-1][0]) if busy else (self.cli_start, self.cli_end)
        work = self.work_window
        if which == "whole":
            return whole
        if work is None:
            return None
        return {"before": (whole[0], work[0]), "during": work, "after": (work[1], whole[1])}[which]

    def our_cpu(self, which: str) -> float:
        """CPU seconds of our processes (the command's, the helpers', this bench's) in a
        window (see `window`); 0 without it."""
        window = self.window(which)
        if window is None:
            return 0.0
        skip = (OTHER_ROLE, MACHINE_ROLE)
        # Each step's own CPU is in the forked processes' total already.
        cpu = self.cpu(window).items()
        return sum(v for k, v in cpu if k not in skip and not k.startswith(STEP_PREFIX))

    def step_names(self) -> dict[int, str]:
        """Each forked step process's pid: its role, named after its step."""
        steps = self.log.steps if self.log else []
        return {s.pid: f"{STEP_PREFIX}{s.name}" for s in steps if s.pid is not None}

    def cpu(self, window: tuple[float, float] | None = None) -> dict[str, float]:
        """CPU seconds per role over the whole run (from the sample before the command to the
        one after it) or over `window`, with each forked step process's own."""
        start, end = window or self.window("whole") or (self.cli_start, self.cli_end)
        roles = self.sampler.cpu_by_role(start, end)
        named = self.sampler.cpu_by_role(start, end, self.step_names())
        roles.update({k: v for k, v in named.items() if k.startswith(STEP_PREFIX)})
        return roles


def add_tasks(site: Site, tasks: int, env: Mapping[str, str], root: Path) -> tuple[str, str]:
    """Add `tasks` pages of the site as tasks; returns the first and last key."""
    urls = root / f"urls-{uuid.uuid4().hex[:6]}.txt"
    urls.write_text("".join(f"{site.url}/page/{n}\n" for n in range(tasks)))
    seconds, code, tail = run([str(BIN / "scrapeflow"), "tasks", "add", str(urls)], env)
    assert code == 0, tail
    listing = subprocess.run(
        [
            str(BIN / "python"),
            "-c",
            "import dagster as dg; k = dg.DagsterInstance.get()"
            ".get_dynamic_partitions('tasks'); print(k[0]); print(k[-1])",
        ],
        env=dict(env),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return listing[0], listing[-1]


def materialize(
    module: str,
    first: str,
    last: str,
    env: Mapping[str, str],
    helpers: Mapping[int, str],
    timeout: float = 3600,
) -> tuple[float, int, str, Breakdown]:
    """The measured command: one `dagster asset materialize` over the whole range; (seconds,
    exit code, output tail, where the time went). `helpers`: processes outside the command
    (pid: role) whose CPU counts too; the run's event log is read from `DAGSTER_HOME` after."""
    cmd = [str(BIN / "dagster"), "asset", "materialize", "-m", module, "--select", "scrape"]
    cmd += ["--partition-range", f"{first}...{last}"]
    sampler = PhaseSampler({**service_roots(), **helpers})
    sampler.sample()  # the helpers' and the machine's CPU before the command
    with tempfile.TemporaryFile() as out:
        cli_start, start = time.time(), time.monotonic()
        proc = subprocess.Popen(cmd, env=dict(env), cwd=REPO, stdout=out, stderr=out)
        sampler.watch(proc.pid)
        with sampler:
            try:
                code = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
        seconds, cli_end = time.monotonic() - start, time.time()
        sampler.sample()  # and after it
        out.seek(0)
        tail = out.read()[-2000:].decode(errors="replace")
    try:
        log = read_run_log(Path(env["DAGSTER_HOME"]))
    except Exception as error:  # the figures stand without the breakdown
        print(f"(no phases: the run's event log could not be read: {error!r})")
        log = None
    return seconds, code, tail, Breakdown(cli_start, cli_end, log, sampler)


def site_helper(site: Site) -> dict[int, str]:
    return {site.proc.pid: SITE_ROLE} if site.proc is not None else {}


def sqlite_run(
    label: str, module: str, shards: int | None, site: Site, tasks: int, root: Path
) -> Row:
    """One run on a fresh embedded home and data dir."""
    home = make_home(root, f"home-{label}", ours=True)
    data = root / f"data-{label}"
    # The shipped location is sharded on a multi-core machine unless told 1 (unsharded).
    extra = {"SCRAPEFLOW_SHARDS": str(shards or 1)}
    env = bench_env(home, data, extra)
    first, last = add_tasks(site, tasks, env, root)
    seconds, code, tail, breakdown = materialize(module, first, last, env, site_helper(site))
    if code:
        print(tail)
    duck = (
        (data / "scrapeflow.duckdb").stat().st_size if (data / "scrapeflow.duckdb").exists() else 0
    )
    status = sum(p.stat().st_size for p in (data / "status").iterdir())
    return Row(
        label,
        seconds,
        tasks,
        code == 0,
        f"duckdb {duck / tasks:.0f} B/task, status+body {status / tasks:.0f} B/task",
        breakdown,
    )


@contextmanager
def postgres_database() -> Iterator[str | None]:
    """A fresh database of the benchmark's own (dropped afterwards), None when unreachable."""
    try:
        import psycopg2

        admin = psycopg2.connect(POSTGRES_ADMIN, connect_timeout=3)
    except Exception as error:
        print(f"(no Celery rows: PostgreSQL unreachable: {error})")
        yield None
        return
    admin.autocommit = True
    name = f"sfbench_{uuid.uuid4().hex[:8]}"
    with admin.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {name}")
    try:
        yield name
    finally:
        with admin.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.close()


def database_bytes(name: str) -> int:
    import psycopg2

    with psycopg2.connect(POSTGRES_ADMIN) as conn, conn.cursor() as cursor:
        cursor.execute("SELECT pg_database_size(%s)", [name])
        return int(cursor.fetchone()[0])


def redis_broker() -> str | None:
    try:
        import redis

        client = redis.Redis(host="127.0.0.1", port=6379, db=REDIS_DB, socket_timeout=3)
        client.flushdb()
        client.close()
    except Exception as error:
        print(f"(no Celery rows: Redis unreachable: {error})")
        return None
    return f"redis://127.0.0.1:6379/{REDIS_DB}"


def celery_run(workers: int, site: Site, tasks: int, root: Path) -> Row | None:
    """One run with `workers` Celery workers (2 shards) on a fresh Postgres home."""
    broker = redis_broker()
    with postgres_database() as db:
        if db is None or broker is None:
            return None
        home = root / f"home-celery-{workers}"
        home.mkdir()
        url = f"postgresql+psycopg2://postgres@127.0.0.1:5432/{db}"
        # What `scrapeflow home init --postgres URL` writes: the batched Postgres event log.
        (home / "dagster.yaml").write_text(dagster_yaml(home, postgres=url))
        data = root / f"data-celery-{workers}"
        env = bench_env(home, data, {"SCRAPEFLOW_SHARDS": "2", "SCRAPEFLOW_CELERY_BROKER": broker})
        first, last = add_tasks(site, tasks, env, root)
        before = database_bytes(db)  # the schema and the task partitions
        procs = [
            start_worker(
                broker,
                name=f"bench-{n}@localhost",
                env=env,
                cwd=REPO,
                log_path=root / f"worker-{workers}-{n}.log",
            )
            for n in range(workers)
        ]
        try:
            for n in range(workers):  # each worker imports the code location first
                log = root / f"worker-{workers}-{n}.log"
                deadline = time.monotonic() + 120
                while not (log.exists() and b" ready." in log.read_bytes()):
                    assert time.monotonic() < deadline, f"worker {n} did not start: {log}"
                    time.sleep(0.2)
            helpers = {**site_helper(site), **{proc.pid: CELERY_ROLE for proc in procs}}
            seconds, code, tail, breakdown = materialize(SHARDED, first, last, env, helpers)
        finally:
            for proc in procs:
                os.killpg(proc.pid, 15)
                proc.wait(timeout=60)
        if code:
            print(tail)
        size = database_bytes(db)
        return Row(
            f"celery, {workers} worker(s), 2 shards",
            seconds,
            tasks,
            code == 0,
            f"postgres: the run {(size - before) / tasks:.0f} B/task, "
            f"the tasks {before / tasks:.0f} B/task (db {size / 2**20:.0f} MiB)",
            breakdown,
        )


def role_order(role: str) -> tuple[int, int, str]:
    """Roles in a fixed order: ours, each step's below the forked processes, the rest last."""
    fixed = [CLI_ROLE, FORKSERVER_ROLE, FORKED_ROLE, STEP_PREFIX, CELERY_ROLE, SITE_ROLE]
    fixed += [POSTGRES_ROLE, REDIS_ROLE, BENCH_ROLE]
    last = [OTHER_ROLE, MACHINE_ROLE]
    if role.startswith(STEP_PREFIX):
        name = role[len(STEP_PREFIX) :]
        return fixed.index(STEP_PREFIX), StepTimes(name).rank, name
    if role in fixed:
        return fixed.index(role), 0, ""
    if role in last:
        return len(fixed) + 1 + last.index(role), 0, ""
    return len(fixed), 0, role


def print_cpu_table(runs: Mapping[str, Breakdown], which: str, title: str) -> None:
    """CPU seconds per role of each run in one of its windows (roles under 0.01 s left out)."""
    cpu: dict[str, dict[str, float]] = {}
    spans: list[float | None] = []
    for label, b in runs.items():
        window = b.window(which)
        cpu[label] = b.cpu(window) if window else {}
        spans.append(window[1] - window[0] if window else None)
    roles = {role for found in cpu.values() for role in found}
    shown = [r for r in roles if max(abs(c.get(r, 0.0)) for c in cpu.values()) >= 0.01]
    table: list[list[str | float | None]] = [["(window, wall seconds)", *spans]]
    table += [[r, *[cpu[label].get(r) for label in runs]] for r in sorted(shown, key=role_order)]
    busy_cores = [
        None if not s or MACHINE_ROLE not in cpu[label] else cpu[label][MACHINE_ROLE] / s
        for label, s in zip(runs, spans, strict=True)
    ]
    table.append([f"(machine busy cores, of {os.cpu_count()})", *busy_cores])
    print_table(["CPU seconds per role", *runs], table, title=f"CPU, {title}")


def print_breakdowns(rows: Sequence[Row]) -> None:
    """The phases of each run, its CPU per role, and what Amdahl's law allows 2 shards."""
    runs = {r.label: r.breakdown for r in rows if r.breakdown is not None}
    if not runs:
        return
    phases = {label: b.phases() for label, b in runs.items()}
    names: dict[PhaseKey, str] = {}
    for found in phases.values():
        names.update({key: name for key, (name, _) in found.items() if key not in names})
    print_table(
        ["phase (seconds; steps at the same time overlap)", *runs],
        [[names[k], *[p.get(k, ("", None))[1] for p in phases.values()]] for k in sorted(names)],
        title="Where the time went: phases from each run's own event log",
    )
    for title, which in (
        ("whole run: from just before the CLI started to just after it ended", "whole"),
        ("before the shard steps: CLI start to the first shard's STEP_START", "before"),
        ("while the shard steps ran: first STEP_START to last step end", "during"),
        ("after the shard steps: to the CLI's exit", "after"),
    ):
        print_cpu_table(runs, which, title)
    cores = os.cpu_count() or 1
    for label, b in runs.items():
        whole = b.window("whole")
        other = b.cpu(whole).get(OTHER_ROLE) if whole else None
        if whole and other is not None and other / (whole[1] - whole[0]) > 0.1:
            print(
                f"(noise: during '{label}' processes not ours used {other:.1f} CPU s, "
                f"{other / (whole[1] - whole[0]):.2f} cores on average)"
            )
    for two, one in (
        ("2 shards", "1 shard"),
        ("celery, 2 worker(s), 2 shards", "celery, 1 worker(s), 2 shards"),
    ):
        b1, b2 = runs.get(one), runs.get(two)
        if b1 is None or b2 is None or b1.parallel_seconds is None or b2.parallel_seconds is None:
            continue
        t1, p1, t2, p2 = b1.seconds, b1.parallel_seconds, b2.seconds, b2.parallel_seconds
        s1, s2 = t1 - p1, t2 - p2
        ours1, ours2 = b1.our_cpu("during"), b2.our_cpu("during")
        floor = ours1 / cores
        print(f"\n{one} -> {two}:")
        print(
            f"  {one}: {t1:.1f} s = P {p1:.1f} s shard steps running + S {s1:.1f} s the rest "
            f"(P {p1 / t1:.0%} of the run)"
        )
        print(
            f"  Amdahl, P split in 2: S + P/2 = {s1 + p1 / 2:.1f} s -> at most "
            f"{t1 / (s1 + p1 / 2):.2f}x (P split in infinitely many: {t1 / s1:.2f}x); "
            f"1.6x needs S <= P/3 = {p1 / 3:.1f} s"
        )
        print(
            f"  CPU budget: while {one}'s shard steps ran our processes used {ours1:.1f} CPU s "
            f"({ours1 / p1:.2f} cores); on {cores} cores that needs >= {floor:.1f} s -> at most "
            f"{t1 / (s1 + max(p1 / 2, floor)):.2f}x"
        )
        print(
            f"  {two}: {t2:.1f} s = P {p2:.1f} s + S {s2:.1f} s; P {p1 / p2:.2f}x shorter, "
            f"S {s2 - s1:+.1f} s; our processes used {ours2:.1f} CPU s ({ours2 / p2:.2f} cores) "
            f"while its shard steps ran; measured {t1 / t2:.2f}x"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--page-bytes", type=int, default=20_000)
    parser.add_argument("--no-celery", action="store_true", help="only the SQLite rows")
    parser.add_argument("--only-celery", action="store_true", help="only the Celery rows")
    parser.add_argument("--tmp-dir", default=None, help="where homes and data go (default /tmp)")
    args = parser.parse_args(argv)
    rows: list[Row] = []
    with (
        temp_root("sfbench-shards-", args.tmp_dir) as root,
        Site(args.tasks, args.page_bytes) as site,
    ):
        if not args.only_celery:
            for label, module, shards in (
                ("unsharded", UNSHARDED, None),
                ("1 shard", SHARDED, 1),
                ("2 shards", SHARDED, 2),
            ):
                rows.append(sqlite_run(label, module, shards, site, args.tasks, root))
                print(rows[-1], flush=True)  # each figure as soon as it is measured
        if not args.no_celery:
            for workers in (1, 2):
                row = celery_run(workers, site, args.tasks, root)
                if row is not None:
                    rows.append(row)
                    print(rows[-1], flush=True)
    print_table(
        ["run", "tasks", "seconds", "pages/s", "ok", "per task"],
        [[r.label, r.tasks, r.seconds, r.pages_per_second, r.ok, r.extra] for r in rows],
        title=f"scrape over {args.tasks:,} tasks, one run each ({os.cpu_count()} cores)",
    )
    by_label = {r.label: r for r in rows}
    for two, one in (
        ("2 shards", "1 shard"),
        ("celery, 2 worker(s), 2 shards", "celery, 1 worker(s), 2 shards"),
    ):
        if two in by_label and one in by_label:
            ratio = by_label[two].pages_per_second / by_label[one].pages_per_second
            print(f"{two} / {one}: {ratio:.2f}x pages/s (target >= 1.6)")
    print_breakdowns(rows)
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
