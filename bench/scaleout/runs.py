"""The runs the scale-out bench measures: unsharded, sharded and on Celery workers, each as users
start it, with the homes, services and task files they need."""

import os
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bench.lib.homes import bench_env, make_home
from bench.lib.repo import REPO
from bench.lib.site import Site
from bench.scaleout.run_log import Breakdown, read_run_log
from bench.scaleout.sampling import CELERY_ROLE, SITE_ROLE, PhaseSampler, service_roots
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
