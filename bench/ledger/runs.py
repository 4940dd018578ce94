"""One configuration at one size, run as a user runs it, in a fresh Dagster home and data folder.

`scrapeflow home init`, then `scrapeflow tasks add FILE` of `tasks` plain pages of the bundled
site, then `dagster asset materialize -m scrapeflow_dagster.definitions --select ...
--partition-range FIRST...LAST` on the in-process executor (what `scrapeflow materialize` and
the demo run for a run of one shard: fewer than 1,000 tasks per shard), each measured step
under strace and with the counting `sitecustomize` on PYTHONPATH.
"""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.ledger.trace import Places, count_trace, files_under, strace_command

DEFINITIONS_MODULE = "scrapeflow_dagster.definitions"
HOOK_SOURCE = Path(__file__).with_name("sitecustomize.py")
HOOK_OUT_ENV = "COST_LEDGER_OUT"
CHAIN = "scrape,validation,pages"
_TEMPLATE_LOCK = threading.Lock()
_HOME_MARK = "@COST_LEDGER_HOME@"
# A selector set for the bundled site's plain pages (`/page/{n}`): its title and its links.
SELECTORS_YAML = """fields:
  title: "h1::text"
  links: {css: "ul a::attr(href)", all: true, type: url}
"""


@dataclass(frozen=True)
class Configuration:
    """What is run: the assets selected, the `scrape_settings` of the run, the add's options."""

    name: str
    select: str = CHAIN
    scrape_settings: dict[str, Any] = field(default_factory=dict)
    extract: bool = False
    trace_add: bool = False  # the add is the same as the default's unless `extract`
    about: str = ""


CONFIGURATIONS = (
    Configuration("chain", trace_add=True, about="scrape,validation,pages; revisit on, render off"),
    Configuration("scrape", select="scrape", about="--select scrape alone"),
    Configuration(
        "revisit_off", scrape_settings={"revisit_track": False}, about="chain, revisit_track off"
    ),
    Configuration(
        "extract", extract=True, trace_add=True, about="chain, tasks added with --extract"
    ),
    Configuration(
        "page_text",
        scrape_settings={"page_text_max_chars": 100_000},
        about="chain, page_text_max_chars 100000",
    ),
    Configuration(
        "main_content",
        scrape_settings={"page_main_content": True},
        about="chain, page_main_content on (trafilatura; cut at 100000 characters)",
    ),
)


def materialize_command(select: str, first: str, last: str, settings: dict[str, Any]) -> list[str]:
    """The `dagster asset materialize` a user (or `scrapeflow materialize`) runs."""
    config: dict[str, Any] = {"execution": {"config": {"in_process": {}}}}
    if settings:
        config["resources"] = {"scrape_settings": {"config": settings}}
    return [
        sys.executable,
        "-m",
        "dagster",
        "asset",
        "materialize",
        "-m",
        DEFINITIONS_MODULE,
        "--select",
        select,
        "--partition-range",
        f"{first}...{last}",
        "--config-json",
        json.dumps(config),
    ]


def task_key(n: int) -> str:
    """The key of the n-th task: in name order as in the order added."""
    return f"cost-{n:06d}"


@dataclass
class StepResult:
    """One measured command: its counters, and the clock figures beside them."""

    counters: dict[str, float]
    seconds: float
    seconds_to_first_request: float | None


class Workspace:
    """A fresh Dagster home, data folder and hook folder under a temp root."""

    def __init__(self, parent: str | None = None) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="cost-ledger-", dir=parent))
        self.home = self.root / "home"
        self.data = self.root / "data"
        self.hook_dir = self.root / "hook"
        self.hook_dir.mkdir()
        shutil.copy(HOOK_SOURCE, self.hook_dir / "sitecustomize.py")
        self.places = Places(data_dir=self.data.resolve(), home=self.home.resolve())

    def env(self, hook_out: Path | None) -> dict[str, str]:
        """The measured commands' environment: this home and data folder, no inherited Dagster
        or scrapeflow settings, the hook first on PYTHONPATH (active when `hook_out`)."""
        keep = ("DAGSTER_", "SCRAPEFLOW_", HOOK_OUT_ENV)
        env = {k: v for k, v in os.environ.items() if not k.startswith(keep)}
        env["DAGSTER_HOME"] = str(self.home)
        env["SCRAPEFLOW_DATA_DIR"] = str(self.data)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(self.hook_dir), os.environ.get("PYTHONPATH", "")) if p
        )
        if hook_out is not None:
            env[HOOK_OUT_ENV] = str(hook_out)
        return env

    def start(self, tasks: int, site_url: str) -> Path:
        """The home as `scrapeflow home init` makes it (run once per parent folder, then
        copied, its folder renamed in dagster.yaml), and the task file of `tasks` plain pages."""
        with _TEMPLATE_LOCK:
            template = self.root.parent / "cost-ledger-home-template"
            if not template.exists():
                making = Workspace(str(self.root.parent))
                command = [sys.executable, "-m", "scrapeflow_dagster.cli", "home", "init"]
                _run(command, making.env(None), "home init")
                yaml = making.home / "dagster.yaml"  # it names its own folder
                yaml.write_text(yaml.read_text().replace(str(making.home), _HOME_MARK))
                making.home.rename(template)
                making.remove()
        shutil.copytree(template, self.home)
        yaml = self.home / "dagster.yaml"
        yaml.write_text(yaml.read_text().replace(_HOME_MARK, str(self.home)))
        tasks_file = self.root / "tasks.csv"
        lines = ["key,url"] + [f"{task_key(n)},{site_url}/page/{n}" for n in range(tasks)]
        tasks_file.write_text("\n".join(lines) + "\n")
        return tasks_file

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _run(command: list[str], env: dict[str, str], what: str) -> None:
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout)[-3000:]
        raise RuntimeError(f"{what} exited {done.returncode}: {' '.join(command[:8])}\n{tail}")


def _hook_counts(hook_out: Path, places: Places, started: float) -> tuple[Counter[str], float]:
    counts: Counter[str] = Counter()
    first: float | None = None
    for path in sorted(hook_out.glob("*.json")):
        data = json.loads(path.read_text())
        counts["python_processes"] += 1
        for key, n in data["sqlite"].items():
            db, verb = key.split("\t")
            place = places.of(db) if db.startswith("/") else "memory"
            counts[f"sql_statements.{place}"] += n
            counts[f"sql_statements.{place}.{verb}"] += n
        for key, n in data["duckdb"].items():
            db, verb = key.split("\t")
            place = places.of(db) if db.startswith("/") else "memory"
            counts[f"duckdb_statements.{place}"] += n
            counts[f"duckdb_statements.{place}.{verb}"] += n
        request = data.get("first_request")
        if request and (first is None or request["wall"] < first):
            first = request["wall"]
            counts["modules_at_first_request"] = int(request["modules"])
    return counts, (first - started) if first is not None else -1.0


def dagster_events(home: Path) -> Counter[str]:
    """Rows of the home's event log tables: `dagster_events` (the runs' own logs) by type, and
    `dagster_index_rows` (the asset index shard, which keeps the asset events a read needs)."""
    counts: Counter[str] = Counter()
    for db in sorted(home.rglob("*.db")):
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
            if "event_logs" not in tables:
                continue
            rows = conn.execute("SELECT dagster_event_type, count(*) FROM event_logs GROUP BY 1")
            for kind, n in rows:
                if db.name == "index.db":
                    counts["dagster_index_rows"] += n
                else:
                    counts["dagster_events"] += n
                    counts[f"dagster_events.{kind or 'LOG_MESSAGE'}"] += n
        finally:
            conn.close()
    return counts


def measure_step(
    workspace: Workspace, name: str, command: list[str], *, traced: bool
) -> StepResult | None:
    """Run one command; with `traced`, under strace and the hook, and count what it did."""
    if not traced:
        _run(command, workspace.env(None), name)
        return None
    hook_out = workspace.root / f"hook-{name}"
    trace_dir = workspace.root / f"trace-{name}"
    hook_out.mkdir()
    trace_dir.mkdir()
    existing = files_under(workspace.home, workspace.data)
    started = time.time()
    _run(strace_command(trace_dir / "t") + command, workspace.env(hook_out), name)
    seconds = time.time() - started
    files = count_trace(sorted(trace_dir.iterdir()), workspace.places, existing)
    counters: Counter[str] = Counter(files.flat())
    hook, to_first = _hook_counts(hook_out, workspace.places, started)
    counters.update(hook)
    shutil.rmtree(trace_dir)
    return StepResult(
        {k: float(v) for k, v in counters.items()}, seconds, to_first if to_first >= 0 else None
    )


def run_configuration(
    config: Configuration, tasks: int, site_url: str, *, parent: str | None = None
) -> dict[str, StepResult]:
    """Run `config` over `tasks` tasks; returns the measured steps (`add`, `materialize`)."""
    workspace = Workspace(parent)
    try:
        scrapeflow = [sys.executable, "-m", "scrapeflow_dagster.cli"]
        tasks_file = workspace.start(tasks, site_url)
        add = scrapeflow + ["tasks", "add", str(tasks_file)]
        if config.extract:
            selectors = workspace.root / "pagefields.yaml"
            selectors.write_text(SELECTORS_YAML)
            add += ["--extract", str(selectors)]
        results: dict[str, StepResult] = {}
        added = measure_step(workspace, "add", add, traced=config.trace_add)
        if added is not None:
            results["add"] = added
        command = materialize_command(
            config.select, task_key(0), task_key(tasks - 1), config.scrape_settings
        )
        materialized = measure_step(workspace, "materialize", command, traced=True)
        assert materialized is not None
        materialized.counters.update(
            {k: float(v) for k, v in dagster_events(workspace.home).items()}
        )
        results["materialize"] = materialized
        return results
    finally:
        workspace.remove()


def clock_run(tasks: int, site_url: str, *, parent: str | None = None) -> StepResult:
    """The default chain untraced (the hook notes only the first request): wall clock figures
    without strace's slowdown."""
    workspace = Workspace(parent)
    try:
        scrapeflow = [sys.executable, "-m", "scrapeflow_dagster.cli"]
        tasks_file = workspace.start(tasks, site_url)
        _run(scrapeflow + ["tasks", "add", str(tasks_file)], workspace.env(None), "add")
        hook_out = workspace.root / "hook-clock"
        hook_out.mkdir()
        command = materialize_command(CHAIN, task_key(0), task_key(tasks - 1), {})
        started = time.time()
        _run(command, workspace.env(hook_out), "materialize")
        seconds = time.time() - started
        hook, to_first = _hook_counts(hook_out, workspace.places, started)
        return StepResult(
            {k: float(v) for k, v in hook.items()}, seconds, to_first if to_first >= 0 else None
        )
    finally:
        workspace.remove()
