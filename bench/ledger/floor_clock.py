"""Dagster's own start-up, beside ours: from the `dagster asset materialize` command to the first
line of a trivial asset's body (`bench.floor_defs`) on Dagster's stock home, over the same
number of partitions. What our time to the first request cannot go under."""

import os
import sys
import tempfile
import time
from pathlib import Path

from bench.floor_defs import BODY_STARTED_ENV
from bench.ledger.runs import _run, task_key
from bench.lib.homes import DAGSTER_YAML

FLOOR_MODULE = "bench.floor_defs"


def floor_to_body(tasks: int, *, parent: str | None = None) -> dict[str, float]:
    """Seconds from the command to the trivial asset's body, and the modules loaded by then,
    in a fresh stock home with `tasks` partitions."""
    with tempfile.TemporaryDirectory(prefix="cost-floor-", dir=parent) as folder:
        root = Path(folder)
        home = root / "home"
        home.mkdir()
        (home / "dagster.yaml").write_text(DAGSTER_YAML)
        keys = root / "keys.txt"
        keys.write_text("".join(f"{task_key(n)}\n" for n in range(tasks)))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DAGSTER_", "FLOOR_"))}
        env["DAGSTER_HOME"] = str(home)
        repo = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (repo, env.get("PYTHONPATH", "")) if p)
        _run([sys.executable, "-m", FLOOR_MODULE, "add", str(keys)], env, "floor add")
        noted = root / "body-started"
        env[BODY_STARTED_ENV] = str(noted)
        command = [sys.executable, "-m", "dagster", "asset", "materialize", "-m", FLOOR_MODULE]
        command += ["--select", "trivial"]
        command += ["--partition-range", f"{task_key(0)}...{task_key(tasks - 1)}"]
        started = time.time()
        _run(command, env, "floor materialize")
        wall, modules = noted.read_text().split()
        return {"seconds_to_body": float(wall) - started, "modules_at_body": float(modules)}
