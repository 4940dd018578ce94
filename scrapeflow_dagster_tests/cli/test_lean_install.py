"""The embedded default installs and needs no optional backend: the package's own requirements
leave out Celery, Redis, Postgres and Playwright, and with those modules made unimportable the
real `scrapeflow` and `dagster` commands run the chain on the embedded home (a rendered page
too), while asking for a backend names the extra to install."""

import importlib.metadata
import json
import subprocess
import textwrap
from pathlib import Path

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.cli.helpers import write_csv
from scrapeflow_dagster_tests.support.paths import BIN_DIR
from scrapeflow_dagster_tests.support.processes import process_env

EXTRAS_ONLY = (
    "dagster-celery",
    "dagster-postgres",
    "psycopg2-binary",
    "redis",
    "celery",
    "playwright",
)
# Loaded by every Python that has its folder on PYTHONPATH: these modules "are not installed".
BLOCKER = textwrap.dedent(
    """
    import importlib.abc, sys
    BLOCKED = {"dagster_celery", "dagster_postgres", "psycopg2", "redis", "celery", "playwright"}
    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None
    sys.meta_path.insert(0, Blocker())
    """
)


def test_the_package_requires_no_optional_backend() -> None:
    required = [
        r.split(";")[0].split("[")[0].split("=")[0].split(">")[0].split("<")[0].strip().lower()
        for r in importlib.metadata.requires("scrapeflow-dagster") or []
        if "extra ==" not in r
    ]
    assert not set(required) & set(EXTRAS_ONLY), required


def test_without_the_backends_the_embedded_path_runs_and_backends_name_their_extra(
    dagster_home: Path, layout: DataLayout, tmp_path: Path
) -> None:
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCKER)
    env = process_env(dagster_home, layout.root, PYTHONPATH=str(blocker))

    def run(program: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN_DIR / program), *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    probe = run("python", "-c", "import redis")
    assert probe.returncode != 0 and "No module named 'redis'" in probe.stderr  # blocked
    with SiteThread(pages=5) as site:
        rows = [(f"lean-{n}", site.url(f"/page/{n}")) for n in range(5)]
        added = run("scrapeflow", "tasks", "add", str(write_csv(tmp_path / "t.csv", rows)))
        done = run(
            "dagster", "asset", "materialize", "-m", "scrapeflow_dagster.definitions",
            "--select", "scrape,validation,pages", "--partition-range", "lean-0...lean-4",
        )  # fmt: skip
        # A page marked for rendering, Playwright unimportable: the browser is driven without
        # it (the `browser` extra installs nothing).
        marked = tmp_path / "render.csv"
        marked.write_text(f"key,url,render\nlean-render,{site.url('/app/')},true\n")
        added_marked = run("scrapeflow", "tasks", "add", str(marked))
        env["SCRAPEFLOW_RENDER"] = "1"
        rendered = run(
            "dagster", "asset", "materialize", "-m", "scrapeflow_dagster.definitions",
            "--select", "scrape,render,validation,pages", "--partition", "lean-render",
        )  # fmt: skip
    postgres = run("scrapeflow", "home", "init", "--postgres", "postgresql://x@127.0.0.1/x")
    worker = run("scrapeflow", "worker", "--broker", "redis://127.0.0.1:6379/0")

    assert added.returncode == 0, added.stderr
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert postgres.returncode == 2
    assert "`pip install 'scrapeflow-dagster[postgres]'`" in postgres.stderr, postgres.stderr
    assert worker.returncode == 2
    assert "`pip install 'scrapeflow-dagster[celery]'`" in worker.stderr, worker.stderr
    assert added_marked.returncode == 0, added_marked.stderr
    assert rendered.returncode == 0, rendered.stdout[-3000:] + rendered.stderr[-3000:]
    marked_status = json.loads((layout.status_dir / "lean-render.status.json").read_text())
    assert marked_status["render"]["rendered"] is True
    assert marked_status["pages"]["link_count"] > 0  # the links its script wrote
