"""Temporary Dagster homes and folders, and the environment of a measured command."""

import contextlib
import os
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from scrapeflow_dagster.instance import dagster_yaml

# Dagster's stock home (the floor): SQLite storage in the folder, telemetry off.
DAGSTER_YAML = """telemetry:
  enabled: false
run_queue:
  max_concurrent_runs: 4
"""


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


def make_home(root: Path, name: str, extra_yaml: str = "", *, ours: bool = False) -> Path:
    """A fresh DAGSTER_HOME `root/name`: Dagster's stock SQLite home, or with `ours` the one
    `scrapeflow home init` writes (SQLite with batched asset events)."""
    home = root / name
    home.mkdir(parents=True, exist_ok=False)
    base = dagster_yaml(home) if ours else DAGSTER_YAML
    (home / "dagster.yaml").write_text(base + extra_yaml)
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
