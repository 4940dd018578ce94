"""Pages per second of one N-task `scrape` run (default 10,000): unsharded, 1 shard and 2 shards
(multiprocess executor, embedded SQLite home), then 1 and 2 Celery workers (Postgres home,
Redis broker; skipped when either is missing). Prints the ratios, 2 vs 1, and the per-task
costs behind the README's "Scaling out" figures.

`python -m bench.scaleout.bench_shards [--tasks N] [--no-celery]`
"""

import argparse
import os
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.lib.homes import bench_env, make_home, temp_root
from bench.lib.repo import REPO
from bench.lib.report import print_table
from bench.lib.site import Site
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
    module: str, first: str, last: str, env: Mapping[str, str]
) -> tuple[float, int, str]:
    """The measured command: one `dagster asset materialize` over the whole range."""
    cmd = [str(BIN / "dagster"), "asset", "materialize", "-m", module, "--select", "scrape"]
    return run([*cmd, "--partition-range", f"{first}...{last}"], env)


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
    seconds, code, tail = materialize(module, first, last, env)
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
            seconds, code, tail = materialize(SHARDED, first, last, env)
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
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
